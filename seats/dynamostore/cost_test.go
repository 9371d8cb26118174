package dynamostore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/fairgate/fairgate/internal/dynamotest"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

// use is what one operation cost: calls, items read and written, and the
// capacity DynamoDB reported (every call asks for it, TOTAL).
type use struct {
	Calls, Read, Written int
	Units                float64
}

// meter counts a client's calls by operation (dynamodb.Options.APIOptions),
// one per attempt the store makes (the SDK's own retries are one call).
type meter struct {
	mu  sync.Mutex
	ops map[string]use
}

func (m *meter) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("SeatsCostMeter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			askCapacity(in.Parameters)
			out, md, err := next.HandleInitialize(ctx, in)
			m.add(awsmiddleware.GetOperationName(ctx), in.Parameters, out.Result)
			return out, md, err
		}), middleware.Before)
}

func askCapacity(params any) {
	total := types.ReturnConsumedCapacityTotal
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = total
	}
}

func (m *meter) add(op string, params, result any) {
	var u use
	u.Calls = 1
	capacity := func(cs ...types.ConsumedCapacity) {
		for _, c := range cs {
			u.Units += aws.ToFloat64(c.CapacityUnits)
		}
	}
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		if out.Item != nil {
			u.Read = 1
		}
		if out.ConsumedCapacity != nil {
			capacity(*out.ConsumedCapacity)
		}
	case *dynamodb.QueryOutput:
		u.Read = int(out.Count)
		if out.ConsumedCapacity != nil {
			capacity(*out.ConsumedCapacity)
		}
	case *dynamodb.PutItemOutput:
		u.Written = 1
		if out.ConsumedCapacity != nil {
			capacity(*out.ConsumedCapacity)
		}
	case *dynamodb.UpdateItemOutput:
		u.Written = 1
		if out.ConsumedCapacity != nil {
			capacity(*out.ConsumedCapacity)
		}
	case *dynamodb.BatchWriteItemOutput:
		for _, reqs := range params.(*dynamodb.BatchWriteItemInput).RequestItems {
			u.Written += len(reqs)
		}
		capacity(out.ConsumedCapacity...)
	case *dynamodb.TransactWriteItemsOutput:
		u.Written = len(params.(*dynamodb.TransactWriteItemsInput).TransactItems)
		capacity(out.ConsumedCapacity...)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ops == nil {
		m.ops = map[string]use{}
	}
	t := m.ops[op]
	m.ops[op] = use{Calls: t.Calls + u.Calls, Read: t.Read + u.Read, Written: t.Written + u.Written, Units: t.Units + u.Units}
}

// take returns the counts so far and starts again.
func (m *meter) take() map[string]use {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops := m.ops
	m.ops = nil
	return ops
}

func describe(ops map[string]use) string {
	var b strings.Builder
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		u := ops[op]
		fmt.Fprintf(&b, " %s×%d (read %d, wrote %d, %.1f units)", op, u.Calls, u.Read, u.Written, u.Units)
	}
	return b.String()
}

// TestCost pins what each seat operation costs on a storetest.StadiumSize
// event (FAIRGATE_STADIUM=1 for 200,000 seats): a hold, a best-available
// hold and a seat-map page read a bounded number of items whatever the
// event's size; docs/SCALING.md, "Seat operations on a stadium", has the
// figures.
func TestCost(t *testing.T) {
	var m meter
	s := newStore(t, dynamotest.Client(t, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, m.middleware) }))
	ctx := context.Background()
	svc := seats.NewService(s, func() time.Time { return storetest.T0 })
	n := storetest.StadiumSize()
	id := fmt.Sprintf("cost%d", time.Now().UnixNano())
	if _, err := svc.CreateEvent(ctx, storetest.Stadium(id, n)); err != nil {
		t.Fatal(err)
	}
	t.Logf("import of %d seats:%s", n, describe(m.take()))
	if _, _, err := svc.SectionMap(ctx, id, "S001"); err != nil { // caches the event
		t.Fatal(err)
	}
	m.take()
	open := func(user string) seats.Session {
		sess, err := svc.OpenSession(ctx, id, user, "tok-"+user, storetest.T0, nil)
		if err != nil {
			t.Fatal(err)
		}
		m.take()
		return sess
	}
	// Units are the most DynamoDB Local reports. A page is SeatPageSize
	// items of GSI1 read eventually consistent: half a unit per 4 KB, about
	// 176 bytes a stadium seat. A hold's transaction: Local reports 6 for
	// the session and 4 seats (docs/SCALING.md has DynamoDB's own rules).
	// An Idempotency-Key adds its record (the session's JSON inside, under
	// 1 KB) to the transaction: at most one unit more.
	const pageUnits, holdUnits, keyedHoldUnits = 11, 6, 7
	// The event item and its sections (about 400 bytes each, read
	// consistently: a unit per 4 KB).
	eventUnits := float64(1 + n/2000/10)
	cases := []struct {
		name string
		op   func() error
		want map[string]use // Units: the most allowed
	}{
		{"hold of 4 seats", func() error {
			sess := open("hold")
			_, err := svc.HoldSeats(ctx, sess.ID, "hold", []string{"S002-1-01-1", "S002-1-01-2", "S002-1-01-3", "S002-1-01-4"}, storetest.T0, nil)
			return err
		}, map[string]use{"GetItem": {Calls: 1, Read: 1, Units: 1}, "TransactWriteItems": {Calls: 1, Written: 5, Units: holdUnits}}},
		{"hold of 4 seats with an Idempotency-Key", func() error {
			sess := open("keyed")
			key := &seats.Idempotency{Key: "cost-" + id, Fingerprint: "fp", Status: 200}
			_, err := svc.HoldSeats(ctx, sess.ID, "keyed", []string{"S002-1-02-1", "S002-1-02-2", "S002-1-02-3", "S002-1-02-4"}, storetest.T0, key)
			return err
		}, map[string]use{"GetItem": {Calls: 1, Read: 1, Units: 1}, "TransactWriteItems": {Calls: 1, Written: 6, Units: keyedHoldUnits}}},
		{"best available 4", func() error {
			sess := open("best")
			_, err := svc.HoldBest(ctx, sess.ID, "best", 4, []string{"S003"}, storetest.T0, nil)
			return err
		}, map[string]use{"GetItem": {Calls: 2, Read: 2, Units: 2}, "Query": {Calls: 1, Read: seats.SeatPageSize, Units: pageUnits}, "TransactWriteItems": {Calls: 1, Written: 5, Units: holdUnits}}},
		{"seat-map page", func() error {
			_, _, err := s.SeatPage(ctx, id, "S004", "", seats.SeatPageSize)
			return err
		}, map[string]use{"Query": {Calls: 1, Read: seats.SeatPageSize, Units: pageUnits}}},
		{"event read (cached by seats.Service)", func() error {
			_, err := s.Event(ctx, id)
			return err
		}, map[string]use{"Query": {Calls: 1, Read: 1 + n/2000, Units: eventUnits}}},
		{"section map", func() error {
			_, _, err := svc.SectionMap(ctx, id, "S005")
			return err
		}, map[string]use{"Query": {Calls: 5, Read: 2000, Units: 5 * pageUnits}}},
	}
	for _, c := range cases {
		if err := c.op(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := m.take()
		t.Logf("%s:%s", c.name, describe(got))
		if len(got) != len(c.want) {
			t.Errorf("%s: operations%s, want%s", c.name, describe(got), describe(c.want))
		}
		for op, w := range c.want {
			g := got[op]
			if g.Calls != w.Calls || g.Read != w.Read || g.Written != w.Written || g.Units > w.Units {
				t.Errorf("%s: %s×%d read %d wrote %d units %.1f; want ×%d read %d wrote %d units at most %.1f", c.name, op, g.Calls, g.Read, g.Written, g.Units, w.Calls, w.Read, w.Written, w.Units)
			}
		}
	}
	_, _, err := svc.EventCounts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("event counts (the whole map):%s", describe(m.take()))
}
