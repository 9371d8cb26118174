package dynamostore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// PublishPopulation implements roomstate.Store: one unconditional put of
// the node's item.
func (s *Store) PublishPopulation(ctx context.Context, room, node string, value float64, until time.Time) error {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("population %v of node %s is not a number", value, node)
	}
	item := populationItem{itemKey: populationKey(room, node), Value: value, Until: until.UnixMilli(), TTL: ttl(until)}
	return s.publish(ctx, "population of node "+node, item)
}

// Population implements roomstate.Store: one query over the room's
// population items; an expired item is absent.
func (s *Store) Population(ctx context.Context, room string, now time.Time) (float64, int, error) {
	items, err := queryPartition[populationItem](ctx, s, populationPK(room), "population")
	if err != nil {
		return 0, 0, err
	}
	var sum float64
	var nodes int
	for _, it := range items {
		if now.UnixMilli() >= it.Until {
			continue
		}
		sum += it.Value
		nodes++
	}
	return sum, nodes, nil
}

// PublishSketch implements roomstate.Store: one unconditional put of the
// node's item.
func (s *Store) PublishSketch(ctx context.Context, room, node string, sketch []byte, until time.Time) error {
	item := sketchItem{itemKey: sketchKey(room, node), Sketch: sketch, Until: until.UnixMilli(), TTL: ttl(until)}
	return s.publish(ctx, "sketch of node "+node, item)
}

// Sketches implements roomstate.Store: one query over the room's sketch
// items; an expired item is absent.
func (s *Store) Sketches(ctx context.Context, room string, now time.Time) ([][]byte, error) {
	items, err := queryPartition[sketchItem](ctx, s, sketchPK(room), "sketches")
	if err != nil {
		return nil, err
	}
	var sketches [][]byte
	for _, it := range items {
		if now.UnixMilli() < it.Until {
			sketches = append(sketches, it.Sketch)
		}
	}
	return sketches, nil
}

// publish writes a node's item unconditionally: each node owns its item,
// the last write wins. what names the item in errors.
func (s *Store) publish(ctx context.Context, what string, item any) error {
	it, err := marshal(item)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it})
	return s.wrap(ctx, "publishing "+what, err)
}

// queryPartition reads every item of the partition pk, page by page, with
// consistent reads: what one node published must be what every node reads.
// what names the items in errors.
func queryPartition[T any](ctx context.Context, s *Store, pk, what string) ([]T, error) {
	expr, err := build(expression.NewBuilder().WithKeyCondition(expression.Key("pk").Equal(expression.Value(pk))))
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pages := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	var all []T
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, s.wrap(ctx, "reading "+what, err)
		}
		var items []T
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("decoding %s of %s: %w", what, pk, err)
		}
		all = append(all, items...)
	}
	return all, nil
}
