package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ReserveRanks implements roomstate.Store: one atomic increment.
func (s *Store) ReserveRanks(ctx context.Context, room string, n int64) (int64, error) {
	expr, err := build(expression.NewBuilder().
		WithUpdate(expression.Set(nextName, expression.Plus(nextName.IfNotExists(expression.Value(0)), expression.Value(n)))))
	if err != nil {
		return 0, err
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	in := s.update(rankKey(room), expr)
	in.ReturnValues = types.ReturnValueUpdatedNew
	out, err := s.db.UpdateItem(ctx, in)
	if err != nil {
		return 0, s.wrap(ctx, "reserving ranks", err)
	}
	var it rankItem
	if err := unmarshal(out.Attributes, &it); err != nil {
		return 0, fmt.Errorf("room %s rank counter: %w", room, err)
	}
	return it.Next - n, nil
}
