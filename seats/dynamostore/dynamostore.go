// Package dynamostore is the seat service's DynamoDB store, for when one
// machine is not enough. Its data model (docs/DESIGN.md, "The store interface"):
//
//	Seats table         PK <event>#<seat>, SK META; GSI1 <event>#<section> /
//	                    <block>#<row>#<number>; the event itself at <event>#EVENT.
//	Reservations table  SESSION#<id>, LIVE#<user>#<event> (one live session
//	                    per user and event), TOKEN#<wid> (one session per
//	                    waiting token), KEY#<idempotency key>; `ttl` collects
//	                    what is no longer needed.
//
// Times are numbers (epoch milliseconds). Every change is one
// TransactWriteItems that applies the domain's rule: session items carry a
// version for optimistic concurrency, seats carry conditions that make a
// seat lockable only when it is available or its lock has expired.
package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/fairgate/fairgate/seats"
)

// Tables names the two tables.
type Tables struct {
	Seats, Reservations string
}

// DefaultTables are the tables `fairgate seats init-tables` creates.
var DefaultTables = Tables{Seats: "fairgate_seats", Reservations: "fairgate_reservations"}

// Store is a seats.Store on DynamoDB.
type Store struct {
	db     *dynamodb.Client
	tables Tables
}

// New returns a store over a DynamoDB client.
func New(db *dynamodb.Client, tables Tables) *Store { return &Store{db: db, tables: tables} }

// Close implements seats.Store.
func (s *Store) Close() error { return nil }

// CreateTables creates both tables (on-demand capacity), the seat index,
// and the TTL attribute. Existing tables are left as they are.
func (s *Store) CreateTables(ctx context.Context) error {
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(pk, sk string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(sk), KeyType: types.KeyTypeRange}}
	}
	tables := []*dynamodb.CreateTableInput{
		{
			TableName:            aws.String(s.tables.Seats),
			AttributeDefinitions: []types.AttributeDefinition{str("PK"), str("SK"), str("GSI1PK"), str("GSI1SK")},
			KeySchema:            keys("PK", "SK"),
			BillingMode:          types.BillingModePayPerRequest,
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName: aws.String("GSI1"), KeySchema: keys("GSI1PK", "GSI1SK"),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			}},
		},
		{
			TableName:            aws.String(s.tables.Reservations),
			AttributeDefinitions: []types.AttributeDefinition{str("PK"), str("SK")},
			KeySchema:            keys("PK", "SK"),
			BillingMode:          types.BillingModePayPerRequest,
		},
	}
	for _, in := range tables {
		_, err := s.db.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("creating table %s: %w", *in.TableName, err)
		}
		waiter := dynamodb.NewTableExistsWaiter(s.db)
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, 2*time.Minute); err != nil {
			return fmt.Errorf("waiting for table %s: %w", *in.TableName, err)
		}
	}
	_, err := s.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(s.tables.Reservations),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)},
	})
	var apiErr smithy.APIError
	if err != nil && !(errors.As(err, &apiErr) && strings.Contains(apiErr.ErrorMessage(), "already enabled")) {
		return fmt.Errorf("enabling TTL: %w", err)
	}
	return nil
}

// --- attribute helpers ---

type item = map[string]types.AttributeValue

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func nv(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func ms(t time.Time) types.AttributeValue {
	if t.IsZero() {
		return nv(0)
	}
	return nv(t.UnixMilli())
}
func key(pk string) item { return item{"PK": sv(pk), "SK": sv("META")} }

func getS(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it item, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getTime(it item, name string) time.Time {
	if n := getN(it, name); n != 0 {
		return time.UnixMilli(n).UTC()
	}
	return time.Time{}
}

func seatKey(event, seat string) item { return key(event + "#" + seat) }

// --- events and seats ---

// PutEvent implements seats.Store: the event item first (conditional, so a
// second import of the same id fails), then the seats in parallel batches.
func (s *Store) PutEvent(ctx context.Context, ev seats.Event, list []seats.Seat) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.tables.Seats),
		Item:                item{"PK": sv(ev.ID + "#EVENT"), "SK": sv("META"), "data": sv(string(raw))},
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return fmt.Errorf("event %s: %w", ev.ID, seats.ErrExists)
	}
	if err != nil {
		return s.wrap("storing event", err)
	}
	const batch, workers = 25, 8
	jobs := make(chan []types.WriteRequest)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for reqs := range jobs {
				if err := s.writeBatch(ctx, reqs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var reqs []types.WriteRequest
	for _, seat := range list {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: seatItem(ev.ID, seat)}})
		if len(reqs) == batch {
			jobs <- reqs
			reqs = nil
		}
	}
	if len(reqs) > 0 {
		jobs <- reqs
	}
	close(jobs)
	wg.Wait()
	close(errs)
	return <-errs
}

// writeBatch writes one batch, resending what DynamoDB leaves unprocessed.
func (s *Store) writeBatch(ctx context.Context, reqs []types.WriteRequest) error {
	pending := map[string][]types.WriteRequest{s.tables.Seats: reqs}
	for attempt := 0; len(pending[s.tables.Seats]) > 0; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return err
			}
		}
		if attempt > 10 {
			return fmt.Errorf("writing seats: %w", seats.ErrThrottled)
		}
		out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		if err != nil {
			return s.wrap("writing seats", err)
		}
		pending = out.UnprocessedItems
	}
	return nil
}

func seatItem(event string, st seats.Seat) item {
	it := item{
		"PK": sv(event + "#" + st.ID), "SK": sv("META"),
		"GSI1PK": sv(event + "#" + st.Section), "GSI1SK": sv(fmt.Sprintf("%s#%s#%06d", st.Block, st.Row, st.Number)),
		"id": sv(st.ID), "section": sv(st.Section), "block": sv(st.Block), "row": sv(st.Row),
		"number": nv(int64(st.Number)), "price": nv(st.Price), "availability": sv(string(st.Status)),
		"expiresAt": ms(st.ExpiresAt),
	}
	if st.Category != "" {
		it["category"] = sv(st.Category)
	}
	return it
}

func seatFrom(event string, it item) seats.Seat {
	return seats.Seat{
		EventID: event, ID: getS(it, "id"), Section: getS(it, "section"), Block: getS(it, "block"), Row: getS(it, "row"),
		Number: int(getN(it, "number")), Category: getS(it, "category"), Price: getN(it, "price"),
		Status: seats.Availability(getS(it, "availability")), Session: getS(it, "session"),
		ExpiresAt: getTime(it, "expiresAt"), Reservation: getS(it, "reservation"),
	}
}

// Event implements seats.Store.
func (s *Store) Event(ctx context.Context, id string) (seats.Event, error) {
	var ev seats.Event
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.Seats), Key: key(id + "#EVENT"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return ev, s.wrap("reading event", err)
	}
	if out.Item == nil {
		return ev, fmt.Errorf("event %s: %w", id, seats.ErrNotFound)
	}
	err = json.Unmarshal([]byte(getS(out.Item, "data")), &ev)
	return ev, err
}

// SectionSeats implements seats.Store with a query of GSI1. Index reads are
// eventually consistent: a seat map may lag a write by a moment, which the
// holds themselves never do (their conditions read the table).
func (s *Store) SectionSeats(ctx context.Context, event, section string) ([]seats.Seat, error) {
	var out []seats.Seat
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.Seats), IndexName: aws.String("GSI1"),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		ExpressionAttributeValues: item{":pk": sv(event + "#" + section)},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("reading seats", err)
		}
		for _, it := range page.Items {
			out = append(out, seatFrom(event, it))
		}
	}
	return out, nil
}

// --- sessions ---

func sessionItem(sess seats.Session, version int64) (item, error) {
	raw, err := json.Marshal(sess)
	if err != nil {
		return nil, err
	}
	it := key("SESSION#" + sess.ID)
	it["data"], it["version"], it["state"], it["expiresAt"] = sv(string(raw)), nv(version), sv(string(sess.State)), ms(sess.ExpiresAt)
	return it, nil
}

// CreateSession implements seats.Store: the session, its user's live slot
// and its waiting token in one transaction.
func (s *Store) CreateSession(ctx context.Context, sess seats.Session, now time.Time) error {
	it, err := sessionItem(sess, 1)
	if err != nil {
		return err
	}
	live := key("LIVE#" + sess.UserID + "#" + sess.EventID)
	live["session"], live["expiresAt"] = sv(sess.ID), ms(sess.ExpiresAt)
	actions := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: it, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: live,
			ConditionExpression:                 aws.String("attribute_not_exists(PK) OR expiresAt <= :now"),
			ExpressionAttributeValues:           item{":now": ms(now)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
	}
	if sess.TokenID != "" {
		tok := key("TOKEN#" + sess.TokenID)
		tok["session"], tok["ttl"] = sv(sess.ID), nv(now.Add(30*24*time.Hour).Unix())
		actions = append(actions, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: tok,
			ConditionExpression: aws.String("attribute_not_exists(PK)")}})
	}
	reasons, err := s.transact(ctx, actions, "")
	if err != nil {
		return err
	}
	switch {
	case reasons == nil:
		return nil
	case failed(reasons, 2):
		return seats.ErrTokenUsed
	case failed(reasons, 1):
		return &seats.SessionExistsError{Session: getS(reasons[1].Item, "session")}
	default:
		return fmt.Errorf("creating session: %w", seats.ErrExists)
	}
}

// Session implements seats.Store.
func (s *Store) Session(ctx context.Context, id string) (seats.Session, error) {
	sess, _, err := s.readSession(ctx, id)
	return sess, err
}

func (s *Store) readSession(ctx context.Context, id string) (seats.Session, int64, error) {
	var sess seats.Session
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.Reservations), Key: key("SESSION#" + id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return sess, 0, s.wrap("reading session", err)
	}
	if out.Item == nil {
		return sess, 0, fmt.Errorf("session %s: %w", id, seats.ErrNotFound)
	}
	if err := json.Unmarshal([]byte(getS(out.Item, "data")), &sess); err != nil {
		return sess, 0, err
	}
	return sess, getN(out.Item, "version"), nil
}

// heldSeats stands in for the seats a session names, as the rules see them
// before the write: the session's own seats locked by it until its
// deadline, the others available. The write's conditions then check the
// seats themselves.
func heldSeats(sess seats.Session, ids []string) []*seats.Seat {
	out := make([]*seats.Seat, len(ids))
	for i, id := range ids {
		st := &seats.Seat{ID: id, Status: seats.Available}
		for _, held := range sess.Seats {
			if held == id {
				st.Status, st.Session, st.ExpiresAt = seats.Locked, sess.ID, sess.ExpiresAt
			}
		}
		out[i] = st
	}
	return out
}

// change is one session change: read the session, apply the rule to it,
// write the session (if its version is unchanged) and the seat updates the
// rule implies, all in one transaction; retry with jitter when another
// write won the race for the session.
func (s *Store) change(ctx context.Context, id, token string, plan func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error)) (seats.Session, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return seats.Session{}, err
			}
		}
		sess, version, err := s.readSession(ctx, id)
		if err != nil {
			return seats.Session{}, err
		}
		updates, extra, err := plan(&sess)
		if err != nil {
			return seats.Session{}, err
		}
		it, err := sessionItem(sess, version+1)
		if err != nil {
			return seats.Session{}, err
		}
		actions := []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(s.tables.Reservations), Item: it,
			ConditionExpression:       aws.String("version = :v"),
			ExpressionAttributeValues: item{":v": nv(version)},
		}}}
		for _, u := range updates {
			actions = append(actions, types.TransactWriteItem{Update: u.update(s.tables.Seats, sess.EventID)})
		}
		actions = append(actions, extra...)
		reasons, err := s.transact(ctx, actions, attemptToken(token, attempt))
		if err != nil {
			if errors.Is(err, errConflict) && attempt < 6 {
				continue
			}
			return seats.Session{}, err
		}
		if reasons == nil {
			return sess, nil
		}
		if failed(reasons, 0) && attempt < 6 {
			continue // the session changed under us: read it again
		}
		var taken []string
		for i, u := range updates {
			if failed(reasons, i+1) {
				if reasons[i+1].Item == nil {
					return seats.Session{}, fmt.Errorf("%w: unknown seat %s", seats.ErrInvalid, u.seat)
				}
				taken = append(taken, u.seat)
			}
		}
		if len(taken) > 0 {
			if u := updates[0]; u.kind != lockSeat {
				return seats.Session{}, seats.ErrNotHeld
			}
			return seats.Session{}, &seats.TakenError{Seats: taken}
		}
		return seats.Session{}, fmt.Errorf("session %s kept changing: %w", id, seats.ErrThrottled)
	}
}

type updateKind int

const (
	lockSeat updateKind = iota
	releaseSeat
	extendSeat
	reserveSeat
)

// seatUpdate is one conditional seat write.
type seatUpdate struct {
	kind    updateKind
	seat    string
	session string
	now     time.Time
	until   time.Time
	resv    string
}

func (u seatUpdate) update(table, event string) *types.Update {
	names := map[string]string{"#s": "session"}
	vals := item{":sid": sv(u.session), ":locked": sv(string(seats.Locked)), ":now": ms(u.now)}
	up := &types.Update{TableName: aws.String(table), Key: seatKey(event, u.seat),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	heldByUs := "availability = :locked AND #s = :sid AND expiresAt > :now"
	switch u.kind {
	case lockSeat:
		// Available, or locked with an expired lock: lazy release.
		up.ConditionExpression = aws.String("attribute_exists(PK) AND (availability = :available OR (availability = :locked AND expiresAt <= :now))")
		up.UpdateExpression = aws.String("SET availability = :locked, #s = :sid, expiresAt = :until")
		vals[":available"], vals[":until"] = sv(string(seats.Available)), ms(u.until)
	case releaseSeat:
		up.ConditionExpression = aws.String(heldByUs)
		up.UpdateExpression = aws.String("SET availability = :available, expiresAt = :zero REMOVE #s")
		vals[":available"], vals[":zero"] = sv(string(seats.Available)), nv(0)
	case extendSeat:
		up.ConditionExpression = aws.String(heldByUs)
		up.UpdateExpression = aws.String("SET expiresAt = :until")
		vals[":until"] = ms(u.until)
	case reserveSeat:
		up.ConditionExpression = aws.String(heldByUs)
		up.UpdateExpression = aws.String("SET availability = :reserved, reservation = :r, expiresAt = :zero")
		vals[":reserved"], vals[":r"], vals[":zero"] = sv(string(seats.Reserved)), sv(u.resv), nv(0)
	}
	up.ExpressionAttributeNames, up.ExpressionAttributeValues = names, vals
	return up
}

// Hold implements seats.Store.
func (s *Store) Hold(ctx context.Context, h seats.Hold) (seats.Session, error) {
	return s.change(ctx, h.Session, h.Token, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		before := len(sess.Seats)
		if err := seats.ApplyHold(sess, heldSeats(*sess, h.Seats), h); err != nil {
			return nil, nil, err
		}
		var ups []seatUpdate
		for _, id := range sess.Seats[before:] {
			ups = append(ups, seatUpdate{kind: lockSeat, seat: id, session: sess.ID, now: h.Now, until: sess.ExpiresAt})
		}
		return ups, nil, nil
	})
}

// Release implements seats.Store.
func (s *Store) Release(ctx context.Context, session, seat string, now time.Time) (seats.Session, error) {
	return s.change(ctx, session, "", func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		if err := seats.ApplyRelease(sess, heldSeats(*sess, []string{seat})[0], now); err != nil {
			return nil, nil, err
		}
		return []seatUpdate{{kind: releaseSeat, seat: seat, session: sess.ID, now: now}}, nil, nil
	})
}

// Checkout implements seats.Store; the live slot lasts as long as the checkout.
func (s *Store) Checkout(ctx context.Context, session string, now, until time.Time, token string) (seats.Session, error) {
	return s.change(ctx, session, token, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		if err := seats.ApplyCheckout(sess, heldSeats(*sess, sess.Seats), now, until); err != nil {
			return nil, nil, err
		}
		var ups []seatUpdate
		for _, id := range sess.Seats {
			ups = append(ups, seatUpdate{kind: extendSeat, seat: id, session: sess.ID, now: now, until: until})
		}
		return ups, []types.TransactWriteItem{s.liveUpdate(*sess, until)}, nil
	})
}

// Confirm implements seats.Store.
func (s *Store) Confirm(ctx context.Context, session, reservation, paymentRef string, now time.Time, token string) (seats.Session, error) {
	return s.change(ctx, session, token, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		if err := seats.ApplyConfirm(sess, heldSeats(*sess, sess.Seats), reservation, paymentRef, now); err != nil {
			return nil, nil, err
		}
		var ups []seatUpdate
		for _, id := range sess.Seats {
			ups = append(ups, seatUpdate{kind: reserveSeat, seat: id, session: sess.ID, now: now, resv: reservation})
		}
		return ups, []types.TransactWriteItem{s.liveUpdate(*sess, now)}, nil
	})
}

// Cancel implements seats.Store.
func (s *Store) Cancel(ctx context.Context, session string, now time.Time, token string) (seats.Session, error) {
	return s.change(ctx, session, token, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		held := sess.Seats
		if err := seats.ApplyCancel(sess, heldSeats(*sess, held), now); err != nil {
			return nil, nil, err
		}
		var ups []seatUpdate
		for _, id := range held {
			ups = append(ups, seatUpdate{kind: releaseSeat, seat: id, session: sess.ID, now: now})
		}
		return ups, []types.TransactWriteItem{s.liveUpdate(*sess, now)}, nil
	})
}

// liveUpdate moves the end of the user's live slot (to now when the
// session is over, freeing it for a new one).
func (s *Store) liveUpdate(sess seats.Session, until time.Time) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.tables.Reservations), Key: key("LIVE#" + sess.UserID + "#" + sess.EventID),
		UpdateExpression:          aws.String("SET expiresAt = :until, #t = :ttl"),
		ConditionExpression:       aws.String("#s = :sid"),
		ExpressionAttributeNames:  map[string]string{"#s": "session", "#t": "ttl"},
		ExpressionAttributeValues: item{":until": ms(until), ":sid": sv(sess.ID), ":ttl": nv(until.Add(24 * time.Hour).Unix())},
	}}
}

// --- idempotency records ---

// ClaimKey implements seats.Store.
func (s *Store) ClaimKey(ctx context.Context, k string, now time.Time) (seats.KeyRecord, bool, error) {
	it := key("KEY#" + k)
	it["claimedAt"], it["ttl"] = ms(now), nv(now.Add(24*time.Hour).Unix())
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.Reservations), Item: it,
		ConditionExpression:                 aws.String("attribute_not_exists(PK)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failedCheck *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return seats.KeyRecord{ClaimedAt: now.UTC()}, true, nil
	case errors.As(err, &failedCheck):
		old := failedCheck.Item
		rec := seats.KeyRecord{ClaimedAt: getTime(old, "claimedAt"), Fingerprint: getS(old, "fingerprint"), Status: int(getN(old, "status"))}
		if b, ok := old["body"].(*types.AttributeValueMemberB); ok {
			rec.Body = b.Value
		}
		return rec, false, nil
	default:
		return seats.KeyRecord{}, false, s.wrap("claiming idempotency key", err)
	}
}

// CompleteKey implements seats.Store.
func (s *Store) CompleteKey(ctx context.Context, k string, rec seats.KeyRecord) error {
	it := key("KEY#" + k)
	it["claimedAt"], it["fingerprint"], it["status"] = ms(rec.ClaimedAt), sv(rec.Fingerprint), nv(int64(rec.Status))
	it["body"], it["ttl"] = &types.AttributeValueMemberB{Value: rec.Body}, nv(rec.ClaimedAt.Add(24*time.Hour).Unix())
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.Reservations), Item: it})
	return s.wrap("storing idempotent answer", err)
}

// --- transactions and errors ---

var errConflict = errors.New("transaction conflict")

// transact runs a transaction. A cancellation for failed conditions is not
// an error: its reasons are returned, aligned with actions.
func (s *Store) transact(ctx context.Context, actions []types.TransactWriteItem, token string) ([]types.CancellationReason, error) {
	in := &dynamodb.TransactWriteItemsInput{TransactItems: actions}
	if token != "" {
		in.ClientRequestToken = aws.String(token)
	}
	_, err := s.db.TransactWriteItems(ctx, in)
	if err == nil {
		return nil, nil
	}
	var cancelled *types.TransactionCanceledException
	if errors.As(err, &cancelled) {
		for _, r := range cancelled.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "TransactionConflict":
				return nil, errConflict
			case "ThrottlingError", "ProvisionedThroughputExceeded":
				return nil, fmt.Errorf("transaction: %w", seats.ErrThrottled)
			}
		}
		return cancelled.CancellationReasons, nil
	}
	var conflict *types.TransactionConflictException
	if errors.As(err, &conflict) {
		return nil, errConflict
	}
	return nil, s.wrap("transaction", err)
}

func failed(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

// wrap maps throttling to seats.ErrThrottled (429 with Retry-After).
func (s *Store) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded":
			return fmt.Errorf("%s: %w", what, seats.ErrThrottled)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// attemptToken derives the ClientRequestToken of one attempt from the
// request's idempotency token: the same retried request gets the same token
// with the same parameters; another attempt (after a race) gets its own.
func attemptToken(token string, attempt int) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token + "#" + strconv.Itoa(attempt)))
	return hex.EncodeToString(sum[:16])
}

// backoff is a jittered exponential delay: 10ms, 20ms, 40ms… up to 640ms.
func backoff(attempt int) time.Duration {
	base := 10 * time.Millisecond << min(attempt, 6)
	return base/2 + time.Duration(rand.Int64N(int64(base)))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

var _ seats.Store = (*Store)(nil)
