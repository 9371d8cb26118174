package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"

	"github.com/fairgate/fairgate/internal/dynamotest"
)

// TestItemLayout pins the items the store writes, attribute by attribute
// and type by type, to the layout in the package comment, and reads them
// back: a table written by an earlier version (which mapped items by hand
// to this same layout) stays readable, and one written now by it.
func TestItemLayout(t *testing.T) {
	s := newStore(t, dynamotest.Client(t))
	ctx := context.Background()
	const room = "layout"
	until := storetest.T0.Add(time.Hour)
	slot := storetest.T0.Add(90 * time.Second)
	control := roomstate.Control{State: "queue", Rate: 12.5}

	if _, err := s.SaveControl(ctx, room, control, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveControl(ctx, room, control, 1); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ReserveBudget(ctx, room, roomstate.Window{Index: 7, Limit: 10, Expires: until}, 4); n.N != 4 || err != nil {
		t.Fatalf("ReserveBudget = %+v, %v", n, err)
	}
	lapsedWindow := roomstate.Window{Index: 8, Limit: 10, Expires: until}
	if n, err := s.ReserveBudget(ctx, room, lapsedWindow, 4); n.N != 4 || err != nil {
		t.Fatalf("ReserveBudget = %+v, %v", n, err)
	}
	if _, err := s.ReturnLapsed(ctx, room, lapsedWindow, 1); err != nil {
		t.Fatalf("ReturnLapsed: %v", err)
	}
	if _, ok, err := s.HoldPlace(ctx, room, "p1", queue.Place{State: queue.PlaceReserved, Slot: slot}, until, storetest.T0); !ok || err != nil {
		t.Fatalf("HoldPlace = %v, %v", ok, err)
	}
	charged := slot.Add(time.Minute)
	if _, ok, err := s.HoldPlace(ctx, room, "p3", queue.Place{State: queue.PlaceReserved, Slot: slot, Charged: charged}, until, storetest.T0); !ok || err != nil {
		t.Fatalf("HoldPlace(charged) = %v, %v", ok, err)
	}
	at := storetest.T0.Add(5 * time.Second)
	usedBy := queue.Place{State: queue.PlaceUsed, By: "digest", Pass: "pass-id", At: at}
	if _, ok, err := s.HoldPlace(ctx, room, "p2", usedBy, until, storetest.T0); !ok || err != nil {
		t.Fatalf("HoldPlace(used) = %v, %v", ok, err)
	}
	if err := s.PublishPopulation(ctx, room, "node-a", 2.75, until); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveRanks(ctx, room, 5); err != nil {
		t.Fatal(err)
	}

	raw, err := json.Marshal(control)
	if err != nil {
		t.Fatal(err)
	}
	s_ := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	ttl := n(until.Unix() + 1)
	for _, want := range []item{
		{"pk": s_("ROOM#" + room), "sk": s_("CONTROL"), "control": s_(string(raw)), "version": n(2)},
		{"pk": s_("BUDGET#" + room + "#7"), "sk": s_("W"), "used": n(4), "ttl": ttl},
		{"pk": s_("BUDGET#" + room + "#8"), "sk": s_("W"), "used": n(3), "lapsed": n(1), "ttl": ttl},
		{"pk": s_("USED#" + room + "#p1"), "sk": s_("U"), "until": n(until.UnixMilli()), "state": n(int64(queue.PlaceReserved)), "slot": n(slot.UnixNano()), "ttl": ttl},
		{"pk": s_("USED#" + room + "#p2"), "sk": s_("U"), "until": n(until.UnixMilli()), "state": n(int64(queue.PlaceUsed)), "slot": n(0), "ttl": ttl,
			"by": s_("digest"), "pass": s_("pass-id"), "at": n(at.UnixNano())},
		{"pk": s_("USED#" + room + "#p3"), "sk": s_("U"), "until": n(until.UnixMilli()), "state": n(int64(queue.PlaceReserved)), "slot": n(slot.UnixNano()), "ttl": ttl,
			"charged": n(charged.UnixNano())},
		{"pk": s_("POP#" + room), "sk": s_("node-a"), "value": &types.AttributeValueMemberN{Value: "2.75"}, "until": n(until.UnixMilli()), "ttl": ttl},
		{"pk": s_("RANK#" + room), "sk": s_("R"), "next": n(5)},
	} {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: item{"pk": want["pk"], "sk": want["sk"]}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := typed(out.Item), typed(want); !maps.Equal(got, want) {
			t.Errorf("item %s:\n got %v\nwant %v", want["pk"], got, want)
		}
	}

	// Read back, the store maps those same items to what was written.
	if c, v, err := s.LoadControl(ctx, room); err != nil || v != 2 || c.Rate != control.Rate || c.State != control.State {
		t.Errorf("LoadControl = %+v, %d, %v", c, v, err)
	}
	if p, err := s.LookupPlace(ctx, room, "p1", storetest.T0); err != nil || p.State != queue.PlaceReserved || !p.Slot.Equal(slot) {
		t.Errorf("LookupPlace = %+v, %v", p, err)
	}
	if p, err := s.LookupPlace(ctx, room, "p3", storetest.T0); err != nil || !p.Slot.Equal(slot) || !p.Charged.Equal(charged) {
		t.Errorf("LookupPlace(charged) = %+v, %v", p, err)
	}
	if p, err := s.LookupPlace(ctx, room, "p2", storetest.T0); err != nil || p.By != usedBy.By || p.Pass != usedBy.Pass || !p.At.Equal(at) {
		t.Errorf("LookupPlace(used) = %+v, %v", p, err)
	}
	if sum, nodes, err := s.Population(ctx, room, storetest.T0); err != nil || sum != 2.75 || nodes != 1 {
		t.Errorf("Population = %v, %d, %v", sum, nodes, err)
	}
	if n, err := s.ReserveBudget(ctx, room, roomstate.Window{Index: 7, Limit: 10, Expires: until}, 8); n.N != 6 || err != nil {
		t.Errorf("ReserveBudget past the limit = %+v, %v, want the 6 left", n, err)
	}
}

// typed shows each attribute of an item as its type and value ("S:x").
func typed(it item) map[string]string {
	m := make(map[string]string, len(it))
	for name, v := range it {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			m[name] = "S:" + v.Value
		case *types.AttributeValueMemberN:
			m[name] = "N:" + v.Value
		default:
			m[name] = fmt.Sprintf("%T", v)
		}
	}
	return m
}
