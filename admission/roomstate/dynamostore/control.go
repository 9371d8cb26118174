package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/admission/roomstate"
)

// LoadControl implements roomstate.Store.
func (s *Store) LoadControl(ctx context.Context, room string) (roomstate.Control, uint64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: controlKey(room).item(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return roomstate.Control{}, 0, s.wrap(ctx, "loading control state", err)
	}
	if out.Item == nil {
		return roomstate.Control{}, 0, fmt.Errorf("room %s: %w", room, roomstate.ErrNotFound)
	}
	var it controlItem
	if err := unmarshal(out.Item, &it); err != nil {
		return roomstate.Control{}, 0, fmt.Errorf("room %s: %w", room, err)
	}
	var c roomstate.Control
	if err := json.Unmarshal([]byte(it.Control), &c); err != nil {
		return roomstate.Control{}, 0, fmt.Errorf("room %s control state: %w", room, err)
	}
	return c, it.Version, nil
}

// SaveControl implements roomstate.Store: a put conditioned on the item
// being absent (prev 0) or still at version prev.
func (s *Store) SaveControl(ctx context.Context, room string, c roomstate.Control, prev uint64) (uint64, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return 0, fmt.Errorf("encoding room %s control state: %w", room, err)
	}
	it, err := marshal(controlItem{itemKey: controlKey(room), Control: string(raw), Version: prev + 1})
	if err != nil {
		return 0, fmt.Errorf("room %s: %w", room, err)
	}
	cond := expression.AttributeNotExists(pkName)
	if prev != 0 {
		cond = versionName.Equal(expression.Value(prev))
	}
	expr, err := build(expression.NewBuilder().WithCondition(cond))
	if err != nil {
		return 0, err
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: it,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if conditionFailed(err) {
		return 0, fmt.Errorf("room %s is not at version %d: %w", room, prev, roomstate.ErrConflict)
	}
	if err != nil {
		return 0, s.wrap(ctx, "saving control state", err)
	}
	return prev + 1, nil
}
