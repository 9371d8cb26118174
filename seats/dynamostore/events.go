package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/fairgate/fairgate/seats"
)

// Event items are "importing" until every seat is written, then "ready";
// only a ready event is visible, so no session can open (nor any seat be
// bought) half-way through an import.
const (
	eventImporting = "importing"
	eventReady     = "ready"
)

// importWorkers bounds the concurrent seat writes of one import.
const importWorkers = 8

// PutEvent implements seats.Store, all or nothing from a client's view:
// the event item is claimed as importing (conditional, so a different
// layout under the same id fails), the seats are written with conditional
// puts by a bounded group of workers that stops at the first failure or
// when ctx ends, and the event becomes visible last. A repost of the same
// layout resumes an interrupted import: seats already written are kept.
func (s *Store) PutEvent(ctx context.Context, ev seats.Event, list []seats.Seat) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encoding event: %w", err)
	}
	sum := sha256.Sum256(raw)
	digest := hex.EncodeToString(sum[:])
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.Seats),
		Item:      item{"PK": sv(ev.ID + "#EVENT"), "SK": sv("META"), "data": sv(string(raw)), "state": sv(eventImporting), "digest": sv(digest)},
		// A new event, or the resumption of this very layout's import.
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR (#st = :importing AND digest = :digest)"),
		ExpressionAttributeNames:  map[string]string{"#st": "state"},
		ExpressionAttributeValues: item{":importing": sv(eventImporting), ":digest": sv(digest)},
	})
	var failedCheck *types.ConditionalCheckFailedException
	if errors.As(err, &failedCheck) {
		return fmt.Errorf("event %s (or another layout's import under that id): %w", ev.ID, seats.ErrExists)
	}
	if err != nil {
		return s.wrap("storing event", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(importWorkers)
	for batch := range slices.Chunk(list, 25) {
		if gctx.Err() != nil {
			break // a worker failed or the caller gave up: stop feeding
		}
		g.Go(func() error { return s.putSeats(gctx, ev.ID, batch) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("importing the seats of %s (repost the same layout to resume): %w", ev.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("importing the seats of %s (repost the same layout to resume): %w", ev.ID, err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Seats), Key: key(ev.ID + "#EVENT"),
		UpdateExpression:          aws.String("SET #st = :ready"),
		ConditionExpression:       aws.String("digest = :digest"),
		ExpressionAttributeNames:  map[string]string{"#st": "state"},
		ExpressionAttributeValues: item{":ready": sv(eventReady), ":digest": sv(digest)},
	})
	return s.wrap("publishing event", err)
}

// putSeats writes up to 25 new seats in one transaction, each only if it
// does not exist; if some do (an import resumed), one by one, keeping those.
func (s *Store) putSeats(ctx context.Context, event string, batch []seats.Seat) error {
	put := func(seat seats.Seat) *types.Put {
		return &types.Put{TableName: aws.String(s.tables.Seats), Item: seatItem(event, seat), ConditionExpression: aws.String("attribute_not_exists(PK)")}
	}
	actions := make([]types.TransactWriteItem, len(batch))
	for i, seat := range batch {
		actions[i] = types.TransactWriteItem{Put: put(seat)}
	}
	for attempt := 0; ; attempt++ {
		reasons, err := s.transact(ctx, actions, "")
		if errors.Is(err, errConflict) && attempt < 6 {
			if err := sleep(ctx, backoff(attempt+1)); err != nil {
				return err
			}
			continue
		}
		if err != nil || reasons == nil {
			return err
		}
		break
	}
	for _, seat := range batch {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.Seats), Item: seatItem(event, seat), ConditionExpression: aws.String("attribute_not_exists(PK)")})
		var exists *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &exists) {
			return s.wrap("writing seat "+seat.ID, err)
		}
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
	if out.Item == nil || getS(out.Item, "state") == eventImporting {
		return ev, fmt.Errorf("event %s: %w", id, seats.ErrNotFound)
	}
	if err := json.Unmarshal([]byte(getS(out.Item, "data")), &ev); err != nil {
		return ev, fmt.Errorf("event %s: %w", id, err)
	}
	return ev, nil
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
