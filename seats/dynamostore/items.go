package dynamostore

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fairgate/fairgate/internal/dynamoav"
	"github.com/fairgate/fairgate/seats"
)

// The items of both tables, mapped with the SDK's attributevalue package.
// Times are epoch milliseconds (0: none), so conditions compare numbers.

type item = map[string]types.AttributeValue

// itemKey is every item's primary key: PK names it, SK is always "META".
type itemKey struct {
	PK string
	SK string
}

const meta = "META"

// key is the primary key of the item named pk.
func key(pk string) item {
	it, _ := attributevalue.MarshalMap(itemKey{PK: pk, SK: meta}) // two strings: cannot fail
	return it
}

func seatKey(event, seat string) item { return key(event + "#" + seat) }

// eventItem is an event: its JSON, and its import's state and digest.
type eventItem struct {
	itemKey
	Data   string `dynamodbav:"data"`
	State  string `dynamodbav:"state"`
	Digest string `dynamodbav:"digest"`
}

// sectionItem is one of an event's sections (seats.Section as JSON,
// without its rows), beside the event item: SK SECTION#<index>, so a
// query of the event's partition returns the event item (META sorts
// first) and its sections in order.
type sectionItem struct {
	itemKey
	Data string `dynamodbav:"data"`
}

func sectionSK(i int) string { return fmt.Sprintf("SECTION#%03d", i) }

// seatItem is a seat, indexed by section (GSI1) in row order.
type seatItem struct {
	itemKey
	GSI1PK       string
	GSI1SK       string
	ID           string `dynamodbav:"id"`
	Section      string `dynamodbav:"section"`
	Block        string `dynamodbav:"block"`
	Row          string `dynamodbav:"row"`
	Number       int    `dynamodbav:"number"`
	Price        int64  `dynamodbav:"price"`
	Category     string `dynamodbav:"category,omitempty"`
	Availability string `dynamodbav:"availability"`
	ExpiresAt    int64  `dynamodbav:"expiresAt"`
	Session      string `dynamodbav:"session,omitempty"`
	Reservation  string `dynamodbav:"reservation,omitempty"`
}

func newSeatItem(event string, st seats.Seat) seatItem {
	return seatItem{
		itemKey: itemKey{PK: event + "#" + st.ID, SK: meta},
		GSI1PK:  event + "#" + st.Section, GSI1SK: fmt.Sprintf("%s#%s#%06d", st.Block, st.Row, st.Number),
		ID: st.ID, Section: st.Section, Block: st.Block, Row: st.Row, Number: st.Number,
		Price: st.Price, Category: st.Category, Availability: string(st.Status), ExpiresAt: ms(st.ExpiresAt),
		Session: st.Session, Reservation: st.Reservation,
	}
}

func (it seatItem) seat(event string) seats.Seat {
	return seats.Seat{
		EventID: event, ID: it.ID, Section: it.Section, Block: it.Block, Row: it.Row,
		Number: it.Number, Category: it.Category, Price: it.Price,
		Status: seats.Availability(it.Availability), Session: it.Session,
		ExpiresAt: fromMS(it.ExpiresAt), Reservation: it.Reservation,
	}
}

// sessionItem is a session: its JSON, its version (optimistic
// concurrency), and its state and deadline for reading at a glance.
type sessionItem struct {
	itemKey
	Data      string `dynamodbav:"data"`
	Version   int64  `dynamodbav:"version"`
	State     string `dynamodbav:"state"`
	ExpiresAt int64  `dynamodbav:"expiresAt"`
}

// liveItem is a user's one live session for an event, until ExpiresAt.
type liveItem struct {
	itemKey
	Session   string `dynamodbav:"session"`
	ExpiresAt int64  `dynamodbav:"expiresAt"`
}

// tokenItem marks a waiting token as having opened Session.
type tokenItem struct {
	itemKey
	Session string `dynamodbav:"session"`
	TTL     int64  `dynamodbav:"ttl"`
}

// keyItem is an idempotency record (seats.KeyRecord as JSON).
type keyItem struct {
	itemKey
	Data string `dynamodbav:"data"`
	TTL  int64  `dynamodbav:"ttl"`
}

// marshal, unmarshal and build are internal/dynamoav's, shared with the
// other DynamoDB store.
var (
	marshal   = dynamoav.Marshal
	unmarshal = dynamoav.Unmarshal
	build     = dynamoav.Build
)

// notExists is the condition of a put that creates an item.
var notExists = expression.AttributeNotExists(expression.Name("PK"))

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}
