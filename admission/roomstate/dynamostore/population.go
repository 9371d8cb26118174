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
	it, err := marshal(populationItem{itemKey: populationKey(room, node), Value: value, Until: until.UnixMilli(), TTL: ttl(until)})
	if err != nil {
		return fmt.Errorf("population of node %s: %w", node, err)
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it})
	return s.wrap(ctx, "publishing population", err)
}

// Population implements roomstate.Store: one query over the room's
// population items; an expired item is absent.
func (s *Store) Population(ctx context.Context, room string, now time.Time) (float64, int, error) {
	expr, err := build(expression.NewBuilder().WithKeyCondition(expression.Key("pk").Equal(expression.Value(populationPK(room)))))
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var sum float64
	var nodes int
	pages := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return 0, 0, s.wrap(ctx, "reading population", err)
		}
		var items []populationItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return 0, 0, fmt.Errorf("population of room %s: %w", room, err)
		}
		for _, it := range items {
			if now.UnixMilli() >= it.Until {
				continue
			}
			sum += it.Value
			nodes++
		}
	}
	return sum, nodes, nil
}

// PublishSketch implements roomstate.Store: one unconditional put of the
// node's item.
func (s *Store) PublishSketch(ctx context.Context, room, node string, sketch []byte, until time.Time) error {
	it, err := marshal(sketchItem{itemKey: sketchKey(room, node), Sketch: sketch, Until: until.UnixMilli(), TTL: ttl(until)})
	if err != nil {
		return fmt.Errorf("sketch of node %s: %w", node, err)
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it})
	return s.wrap(ctx, "publishing sketch", err)
}

// Sketches implements roomstate.Store: one query over the room's sketch
// items; an expired item is absent.
func (s *Store) Sketches(ctx context.Context, room string, now time.Time) ([][]byte, error) {
	expr, err := build(expression.NewBuilder().WithKeyCondition(expression.Key("pk").Equal(expression.Value(sketchPK(room)))))
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var sketches [][]byte
	pages := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, s.wrap(ctx, "reading sketches", err)
		}
		var items []sketchItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("sketches of room %s: %w", room, err)
		}
		for _, it := range items {
			if now.UnixMilli() < it.Until {
				sketches = append(sketches, it.Sketch)
			}
		}
	}
	return sketches, nil
}
