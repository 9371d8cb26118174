package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fairgate/fairgate/admission/roomstate"
)

// ReserveBudget implements roomstate.Store: an increment conditioned on
// leaving used within the limit. When a full block no longer fits, the
// failed condition returns the item, and the call asks for what is left.
//
// That loop is not a retry of a lost race (internal/retry's job): each
// try asks for strictly less than the one before (the failure proves
// fewer than n are left; an item that says otherwise is an error), so it
// ends within n tries, and the next try is computed from the item the
// failure returned, so a pause would only make it staler.
func (s *Store) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	for n = min(n, w.Limit); n > 0; {
		expr, err := build(expression.NewBuilder().
			WithCondition(expression.AttributeNotExists(usedName).Or(usedName.LessThanEqual(expression.Value(w.Limit - n)))).
			WithUpdate(expression.
				Set(usedName, expression.Plus(usedName.IfNotExists(expression.Value(0)), expression.Value(n))).
				Set(ttlName, expression.Value(ttl(w.Expires)))))
		if err != nil {
			return 0, err
		}
		in := s.update(budgetKey(room, w.Index), expr)
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		_, err = s.db.UpdateItem(ctx, in)
		if err == nil {
			return n, nil
		}
		var failed *types.ConditionalCheckFailedException
		if !errors.As(err, &failed) {
			return 0, s.wrap(ctx, "reserving budget", err)
		}
		var it budgetItem
		if err := unmarshal(failed.Item, &it); err != nil {
			return 0, fmt.Errorf("room %s budget window %d: %w", room, w.Index, err)
		}
		left := w.Limit - it.Used
		if left >= n { // the condition cannot have failed: not a state to loop on
			return 0, fmt.Errorf("room %s budget window %d: a reservation of %d failed with %d of %d used", room, w.Index, n, it.Used, w.Limit)
		}
		n = left
	}
	return 0, nil
}

// ReturnBudget implements roomstate.Store. A window whose item is gone
// (expired) has nothing to give back to.
func (s *Store) ReturnBudget(ctx context.Context, room string, w roomstate.Window, n int64) error {
	expr, err := build(expression.NewBuilder().
		WithCondition(usedName.GreaterThanEqual(expression.Value(n))).
		WithUpdate(expression.Set(usedName, usedName.Minus(expression.Value(n)))))
	if err != nil {
		return err
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err = s.db.UpdateItem(ctx, s.update(budgetKey(room, w.Index), expr))
	if err != nil && !conditionFailed(err) {
		return s.wrap(ctx, "returning budget", err)
	}
	return nil
}
