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
	digest := layoutDigest(raw, list)
	it, err := marshal(eventItem{itemKey: itemKey{PK: ev.ID + "#EVENT", SK: meta}, Data: string(raw), State: eventImporting, Digest: digest})
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
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
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

// putSeats writes up to 25 new seats in one transaction, each only if it
// does not exist; if some do (an import resumed), one by one, keeping those.
func (s *Store) putSeats(ctx context.Context, event string, batch []seats.Seat) error {
	create, err := build(expression.NewBuilder().WithCondition(notExists))
	if err != nil {
		return err
	}
	puts := make([]*types.Put, len(batch))
	actions := make([]types.TransactWriteItem, len(batch))
	for i, seat := range batch {
		it, err := marshal(newSeatItem(event, seat))
		if err != nil {
			return err
		}
		puts[i] = &types.Put{TableName: aws.String(s.tables.Seats), Item: it, ConditionExpression: create.Condition(), ExpressionAttributeNames: create.Names()}
		actions[i] = types.TransactWriteItem{Put: puts[i]}
	}
	var reasons []types.CancellationReason
	err = retry.Do(ctx, conflictRetry, isConflict, func(int) error {
		reasons, err = s.transact(ctx, actions, "")
		return err
	})
	if err != nil {
		return conflictIsThrottling(err)
	}
	if reasons == nil {
		return nil
	}
	for i, put := range puts {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression, ExpressionAttributeNames: put.ExpressionAttributeNames})
		var exists *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &exists) {
			return s.wrap("writing seat "+batch[i].ID, err)
		}
	}
	return nil
}

// Event implements seats.Store.
func (s *Store) Event(ctx context.Context, id string) (seats.Event, error) {
	var ev seats.Event
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.Seats), Key: key(id + "#EVENT"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return ev, s.wrap("reading event", err)
	}
	var it eventItem
	if out.Item == nil {
		return ev, fmt.Errorf("event %s: %w", id, seats.ErrNotFound)
	}
	if err := unmarshal(out.Item, &it); err != nil {
		return ev, fmt.Errorf("event %s: %w", id, err)
	}
	if it.State == eventImporting {
		return ev, fmt.Errorf("event %s: %w", id, seats.ErrNotFound)
	}
	if err := json.Unmarshal([]byte(it.Data), &ev); err != nil {
		return ev, fmt.Errorf("event %s: %w", id, err)
	}
	return ev, nil
}

// SectionSeats implements seats.Store with a query of GSI1. Index reads are
// eventually consistent: a seat map may lag a write by a moment, which the
// holds themselves never do (their conditions read the table).
func (s *Store) SectionSeats(ctx context.Context, event, section string) ([]seats.Seat, error) {
	q, err := build(expression.NewBuilder().WithKeyCondition(expression.Key("GSI1PK").Equal(expression.Value(event + "#" + section))))
	if err != nil {
		return nil, err
	}
	var out []seats.Seat
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.Seats), IndexName: aws.String("GSI1"),
		KeyConditionExpression: q.KeyCondition(), ExpressionAttributeNames: q.Names(), ExpressionAttributeValues: q.Values(),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("reading seats", err)
		}
		var items []seatItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("seats of %s: %w", section, err)
		}
		for _, it := range items {
			out = append(out, it.seat(event))
		}
	}
	return out, nil
}
