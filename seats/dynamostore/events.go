package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/fairgate/fairgate/internal/retry"
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

// publishTimeout bounds the last write of an import, which no caller
// cancels.
const publishTimeout = 10 * time.Second

// PutEvent implements seats.Store, all or nothing from a client's view:
// the event item is claimed as importing (conditional, so a different
// layout under the same id fails), the seats are written with batch
// writes by a bounded group of workers that stops at the first
// failure or when ctx ends, and the event becomes visible last. A repost
// of the same layout resumes an interrupted import (batchWrite). The
// event's sections are items of their own beside the event item, so no
// item grows with the venue.
func (s *Store) PutEvent(ctx context.Context, ev seats.Event, list []seats.Seat) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encoding event: %w", err)
	}
	digest := layoutDigest(raw, list)
	bare := ev
	bare.Sections = nil // in items of their own (sectionItem)
	rawBare, err := json.Marshal(bare)
	if err != nil {
		return fmt.Errorf("encoding event: %w", err)
	}
	it, err := marshal(eventItem{itemKey: itemKey{PK: ev.ID + "#EVENT", SK: meta}, Data: string(rawBare), State: eventImporting, Digest: digest})
	if err != nil {
		return err
	}
	sections, err := sectionWrites(ev)
	if err != nil {
		return err
	}
	state, sameDigest := expression.Name("state"), expression.Name("digest").Equal(expression.Value(digest))
	// A new event, or the resumption of this very layout's import.
	claim, err := build(expression.NewBuilder().WithCondition(notExists.Or(state.Equal(expression.Value(eventImporting)).And(sameDigest))))
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.Seats), Item: it,
		ConditionExpression: claim.Condition(), ExpressionAttributeNames: claim.Names(), ExpressionAttributeValues: claim.Values(),
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
	for batch := range slices.Chunk(sections, 25) {
		g.Go(func() error { return s.batchWrite(gctx, batch) })
	}
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
	publish, err := build(expression.NewBuilder().WithCondition(sameDigest).WithUpdate(expression.Set(state, expression.Value(eventReady))))
	if err != nil {
		return err
	}
	// Once the seats are in, publishing runs to its end even if the caller
	// gives up: cut off mid-call it could be applied yet answered as an
	// error, leaving a visible event its client was told failed.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	_, err = s.db.UpdateItem(pctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Seats), Key: key(ev.ID + "#EVENT"),
		UpdateExpression: publish.Update(), ConditionExpression: publish.Condition(),
		ExpressionAttributeNames: publish.Names(), ExpressionAttributeValues: publish.Values(),
	})
	return s.wrap("publishing event", err)
}

// layoutDigest tells one import's layout from another's: the stored
// event is the sections alone (seats.Event.Header), so the seats are
// summed with it.
func layoutDigest(event []byte, list []seats.Seat) string {
	h := sha256.New()
	h.Write(event)
	for _, s := range list {
		fmt.Fprintf(h, "\n%s %d %s %s", s.ID, s.Price, s.Category, s.Status)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sectionWrites are the puts of an event's sections, one item each.
func sectionWrites(ev seats.Event) ([]types.WriteRequest, error) {
	out := make([]types.WriteRequest, len(ev.Sections))
	for i, sec := range ev.Sections {
		raw, err := json.Marshal(sec)
		if err != nil {
			return nil, fmt.Errorf("encoding section %s: %w", sec.ID, err)
		}
		it, err := marshal(sectionItem{itemKey: itemKey{PK: ev.ID + "#EVENT", SK: sectionSK(i)}, Data: string(raw)})
		if err != nil {
			return nil, err
		}
		out[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return out, nil
}

// putSeats writes up to 25 seats (batchWrite).
func (s *Store) putSeats(ctx context.Context, event string, batch []seats.Seat) error {
	reqs := make([]types.WriteRequest, len(batch))
	for i, st := range batch {
		it, err := marshal(newSeatItem(event, st))
		if err != nil {
			return err
		}
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return s.batchWrite(ctx, reqs)
}

// batchWrite writes up to 25 items of an import (sections and seats) in
// one BatchWriteItem (a unit an item, half a transaction's),
// unconditionally: nothing of an event still importing can have changed
// (the event is invisible, so no session can open on it), and the digest
// lets only this very layout resume, so a resumed import rewrites items
// with what they hold. Items DynamoDB leaves unprocessed (throttling) are
// sent again after a pause.
func (s *Store) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	pending := map[string][]types.WriteRequest{s.tables.Seats: reqs}
	err := retry.Do(ctx, unprocessedRetry, isUnprocessed, func(int) error {
		out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		if err != nil {
			return s.wrap("writing the import", err)
		}
		if len(out.UnprocessedItems) == 0 {
			return nil
		}
		pending = out.UnprocessedItems
		return errUnprocessed
	})
	if isUnprocessed(err) {
		return fmt.Errorf("%w: %w", err, seats.ErrThrottled)
	}
	return err
}

// errUnprocessed is a batch write DynamoDB did not finish.
var errUnprocessed = errors.New("items of the import left unprocessed")

func isUnprocessed(err error) bool { return errors.Is(err, errUnprocessed) }

// unprocessedRetry bounds the resends of a batch's unprocessed items:
// 8 tries, pausing about 50ms, 100ms, … up to 2s.
var unprocessedRetry = retry.Policy{Tries: 8, Base: 50 * time.Millisecond, Max: 2 * time.Second}

// Event implements seats.Store: the event item and its sections' items,
// one partition read with a consistent query (the SDK's paginator).
func (s *Store) Event(ctx context.Context, id string) (seats.Event, error) {
	var ev seats.Event
	q, err := build(expression.NewBuilder().WithKeyCondition(expression.Key("PK").Equal(expression.Value(id + "#EVENT"))))
	if err != nil {
		return ev, err
	}
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.Seats), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: q.KeyCondition(), ExpressionAttributeNames: q.Names(), ExpressionAttributeValues: q.Values(),
	})
	var head *eventItem
	var sections []seats.Section
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return ev, s.wrap("reading event", err)
		}
		for _, raw := range page.Items {
			var k itemKey
			if err := unmarshal(raw, &k); err != nil {
				return ev, fmt.Errorf("event %s: %w", id, err)
			}
			if k.SK == meta {
				head = new(eventItem)
				if err := unmarshal(raw, head); err != nil {
					return ev, fmt.Errorf("event %s: %w", id, err)
				}
				continue
			}
			var it sectionItem
			var sec seats.Section
			if err := unmarshal(raw, &it); err != nil {
				return ev, fmt.Errorf("event %s %s: %w", id, k.SK, err)
			}
			if err := json.Unmarshal([]byte(it.Data), &sec); err != nil {
				return ev, fmt.Errorf("event %s %s: %w", id, k.SK, err)
			}
			sections = append(sections, sec)
		}
	}
	if head == nil || head.State == eventImporting {
		return ev, fmt.Errorf("event %s: %w", id, seats.ErrNotFound)
	}
	if err := json.Unmarshal([]byte(head.Data), &ev); err != nil {
		return ev, fmt.Errorf("event %s: %w", id, err)
	}
	if len(sections) > 0 { // an event stored whole keeps its sections in its own item
		ev.Sections = sections
	}
	return ev, nil
}

// SectionSeats implements seats.Store with queries of GSI1, pages of
// seats.SeatPageSize items (the SDK's paginator). Index reads are
// eventually consistent: a seat map may lag a write by a moment, which the
// holds themselves never do (their conditions read the table).
func (s *Store) SectionSeats(ctx context.Context, event, section string) ([]seats.Seat, error) {
	in, err := s.sectionQuery(event, section, seats.SeatPageSize)
	if err != nil {
		return nil, err
	}
	var out []seats.Seat
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("reading seats", err)
		}
		if out, err = appendSeats(out, event, page.Items); err != nil {
			return nil, fmt.Errorf("seats of %s: %w", section, err)
		}
	}
	return out, nil
}

// SeatPage implements seats.Store with one query of GSI1 (Limit limit,
// from ExclusiveStartKey): the cursor is the last seat's index key,
// "<GSI1SK> <seat id>" (neither has a space), from which the whole
// ExclusiveStartKey follows.
func (s *Store) SeatPage(ctx context.Context, event, section, after string, limit int) ([]seats.Seat, string, error) {
	if limit <= 0 || limit > seats.SeatPageSize {
		limit = seats.SeatPageSize
	}
	in, err := s.sectionQuery(event, section, limit)
	if err != nil {
		return nil, "", err
	}
	if after != "" {
		sk, id, ok := strings.Cut(after, " ")
		if !ok {
			return nil, "", fmt.Errorf("%w: seat page cursor %.80q", seats.ErrInvalid, after)
		}
		in.ExclusiveStartKey = item{
			"PK": &types.AttributeValueMemberS{Value: event + "#" + id}, "SK": &types.AttributeValueMemberS{Value: meta},
			"GSI1PK": &types.AttributeValueMemberS{Value: event + "#" + section}, "GSI1SK": &types.AttributeValueMemberS{Value: sk},
		}
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, "", s.wrap("reading seats", err)
	}
	page, err := appendSeats(nil, event, out.Items)
	if err != nil || out.LastEvaluatedKey == nil || len(page) == 0 {
		return page, "", err
	}
	last := newSeatItem(event, page[len(page)-1])
	return page, last.GSI1SK + " " + last.ID, nil
}

// sectionQuery reads a section's seats from GSI1 in seat-map order, limit
// items a page.
func (s *Store) sectionQuery(event, section string, limit int) (*dynamodb.QueryInput, error) {
	q, err := build(expression.NewBuilder().WithKeyCondition(expression.Key("GSI1PK").Equal(expression.Value(event + "#" + section))))
	if err != nil {
		return nil, err
	}
	return &dynamodb.QueryInput{
		TableName: aws.String(s.tables.Seats), IndexName: aws.String("GSI1"), Limit: aws.Int32(int32(limit)),
		KeyConditionExpression: q.KeyCondition(), ExpressionAttributeNames: q.Names(), ExpressionAttributeValues: q.Values(),
	}, nil
}

func appendSeats(out []seats.Seat, event string, items []item) ([]seats.Seat, error) {
	var its []seatItem
	if err := attributevalue.UnmarshalListOfMaps(items, &its); err != nil {
		return nil, err
	}
	for _, it := range its {
		out = append(out, it.seat(event))
	}
	return out, nil
}
