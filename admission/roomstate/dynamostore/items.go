package dynamostore

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fairgate/fairgate/internal/dynamoav"
)

// The table's items (see the package comment), mapped with the SDK's
// attributevalue package. Times are epoch milliseconds, so conditions
// compare numbers; `ttl` is epoch seconds, for DynamoDB's expiry.

type item = map[string]types.AttributeValue

// itemKey is every item's primary key.
type itemKey struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
}

// controlItem is a room's control state (JSON) and its version, the
// compare-and-set's counter.
type controlItem struct {
	itemKey
	Control string `dynamodbav:"control"`
	Version uint64 `dynamodbav:"version"`
}

// budgetItem is one budget window: how much of its limit is reserved.
type budgetItem struct {
	itemKey
	Used   int64 `dynamodbav:"used"`
	Ahead  bool  `dynamodbav:"ahead,omitempty"`  // a reservation was made ahead of the window
	Lapsed int64 `dynamodbav:"lapsed,omitempty"` // returned lapsed (ReturnLapsed)
	TTL    int64 `dynamodbav:"ttl"`
}

// placeItem is a used place id: its queue.PlaceState, its slot (Unix
// nanoseconds, 0: none) and how long it stands.
type placeItem struct {
	itemKey
	Until int64 `dynamodbav:"until"`
	State int64 `dynamodbav:"state"`
	Slot  int64 `dynamodbav:"slot"`
	TTL   int64 `dynamodbav:"ttl"`
	// Charged (Unix nanoseconds) is a reserved place's charged slot
	// (queue.Place); absent when it is the slot.
	Charged int64 `dynamodbav:"charged,omitempty"`
	// By, Pass and At (Unix nanoseconds) are who used the place and the
	// pass they were given (queue.Place); absent when not recorded.
	By   string `dynamodbav:"by,omitempty"`
	Pass string `dynamodbav:"pass,omitempty"`
	At   int64  `dynamodbav:"at,omitempty"`
}

// populationItem is one node's published population, until Until.
type populationItem struct {
	itemKey
	Value float64 `dynamodbav:"value"`
	Until int64   `dynamodbav:"until"`
	TTL   int64   `dynamodbav:"ttl"`
}

// sketchItem is one node's published sketch, until Until.
type sketchItem struct {
	itemKey
	Sketch []byte `dynamodbav:"sketch"`
	Until  int64  `dynamodbav:"until"`
	TTL    int64  `dynamodbav:"ttl"`
}

// rankItem is a room's arrival-rank counter: the next rank to give.
type rankItem struct {
	itemKey
	Next int64 `dynamodbav:"next"`
}

func controlKey(room string) itemKey { return itemKey{PK: "ROOM#" + room, SK: "CONTROL"} }
func budgetKey(room string, idx int64) itemKey {
	return itemKey{PK: "BUDGET#" + room + "#" + strconv.FormatInt(idx, 10), SK: "W"}
}
func usedKey(room, id string) itemKey         { return itemKey{PK: "USED#" + room + "#" + id, SK: "U"} }
func populationPK(room string) string         { return "POP#" + room }
func populationKey(room, node string) itemKey { return itemKey{PK: populationPK(room), SK: node} }
func sketchPK(room string) string             { return "SKETCH#" + room }
func sketchKey(room, node string) itemKey     { return itemKey{PK: sketchPK(room), SK: node} }
func rankKey(room string) itemKey             { return itemKey{PK: "RANK#" + room, SK: "R"} }

// item is the key as a request's Key.
func (k itemKey) item() item {
	it, _ := attributevalue.MarshalMap(k) // two strings: cannot fail
	return it
}

// update is the request that applies expr (its update and, if it has one,
// its condition) to the item at key.
func (s *Store) update(key itemKey, expr expression.Expression) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: key.item(),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
}

// ttl is the `ttl` of an item that stands until t: the second after it.
func ttl(t time.Time) int64 { return t.Unix() + 1 }

// marshal, unmarshal and build are internal/dynamoav's, shared with the
// other DynamoDB store.
var (
	marshal   = dynamoav.Marshal
	unmarshal = dynamoav.Unmarshal
	build     = dynamoav.Build
)

// Attribute names, as the expressions use them.
var (
	pkName      = expression.Name("pk")
	versionName = expression.Name("version")
	usedName    = expression.Name("used")
	aheadName   = expression.Name("ahead")
	lapsedName  = expression.Name("lapsed")
	ttlName     = expression.Name("ttl")
	untilName   = expression.Name("until")
	stateName   = expression.Name("state")
	slotName    = expression.Name("slot")
	chargedName = expression.Name("charged")
	byName      = expression.Name("by")
	passName    = expression.Name("pass")
	atName      = expression.Name("at")
	nextName    = expression.Name("next")
)
