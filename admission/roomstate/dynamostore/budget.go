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
// leaving used within the limit, which marks the window `ahead` when the
// reservation is made ahead of it, and answers with the item as it left
// it. When a full block no longer fits, the failed condition returns the
// item, and the call asks for what is left.
//
// That loop is not a retry of a lost race (internal/retry's job): each
// try asks for strictly less than the one before (the failure proves
// fewer than n are left; an item that says otherwise is an error), so it
// ends within n tries, and the next try is computed from the item the
// failure returned, so a pause would only make it staler.
func (s *Store) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (roomstate.Grant, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var it budgetItem
	for n = min(n, w.Limit); n > 0; {
		update := expression.
			Set(usedName, expression.Plus(usedName.IfNotExists(expression.Value(0)), expression.Value(n))).
			Set(ttlName, expression.Value(ttl(w.Expires)))
		if w.Ahead {
			update = update.Set(aheadName, expression.Value(true))
		}
		expr, err := build(expression.NewBuilder().
			WithCondition(expression.AttributeNotExists(usedName).Or(usedName.LessThanEqual(expression.Value(w.Limit - n)))).
			WithUpdate(update))
		if err != nil {
			return roomstate.Grant{}, err
		}
		in := s.update(budgetKey(room, w.Index), expr)
		in.ReturnValues = types.ReturnValueAllNew
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		out, err := s.db.UpdateItem(ctx, in)
		if err == nil {
			if err := unmarshal(out.Attributes, &it); err != nil {
				return roomstate.Grant{}, fmt.Errorf("room %s budget window %d: %w", room, w.Index, err)
			}
			return roomstate.Grant{N: n, First: it.Used - n + it.Lapsed, Ahead: it.Ahead, Lapsed: it.Lapsed}, nil
		}
		var failed *types.ConditionalCheckFailedException
		if !errors.As(err, &failed) {
			return roomstate.Grant{}, s.wrap(ctx, "reserving budget", err)
		}
		if err := unmarshal(failed.Item, &it); err != nil {
			return roomstate.Grant{}, fmt.Errorf("room %s budget window %d: %w", room, w.Index, err)
		}
		left := w.Limit - it.Used
		if left >= n { // the condition cannot have failed: not a state to loop on
			return roomstate.Grant{}, fmt.Errorf("room %s budget window %d: a reservation of %d failed with %d of %d used", room, w.Index, n, it.Used, w.Limit)
		}
		n = left
	}
	return roomstate.Grant{First: it.Used + it.Lapsed, Ahead: it.Ahead, Lapsed: it.Lapsed}, nil
}

// ReturnBudget implements roomstate.Store: used goes down by n on the
// condition that the window still ends at top, else the admissions go
// back lapsed (ReturnLapsed). An expression cannot add two attributes, so
// the condition names used and lapsed apart: the first try takes none
// lapsed, and when the item it fails on ends at top, the second takes
// that item's split. Each call has a deadline of its own. A window whose
// item is gone (expired) has nothing to give back to.
func (s *Store) ReturnBudget(ctx context.Context, room string, w roomstate.Window, n, top int64) error {
	var lapsed int64
	for range 2 {
		split := lapsedName.Equal(expression.Value(lapsed))
		if lapsed == 0 {
			split = expression.AttributeNotExists(lapsedName).Or(split)
		}
		expr, err := build(expression.NewBuilder().
			WithCondition(usedName.GreaterThanEqual(expression.Value(n)).
				And(usedName.Equal(expression.Value(top - lapsed))).
				And(split)).
			WithUpdate(expression.Set(usedName, usedName.Minus(expression.Value(n)))))
		if err != nil {
			return err
		}
		it, done, err := s.returnOnce(ctx, budgetKey(room, w.Index), expr)
		if done || err != nil {
			return err
		}
		if it == nil || it.Used < n {
			return nil
		}
		if it.Used+it.Lapsed != top || it.Lapsed == lapsed {
			break
		}
		lapsed = it.Lapsed
	}
	_, err := s.ReturnLapsed(ctx, room, w, n)
	return err
}

// returnOnce makes one conditional budget update under its own deadline:
// done when it was made, else the item as the failed condition found it
// (nil when there is none).
func (s *Store) returnOnce(ctx context.Context, key itemKey, expr expression.Expression) (*budgetItem, bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	in := s.update(key, expr)
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	_, err := s.db.UpdateItem(ctx, in)
	if err == nil {
		return nil, true, nil
	}
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		return nil, false, s.wrap(ctx, "returning budget", err)
	}
	if failed.Item == nil {
		return nil, false, nil
	}
	var it budgetItem
	if err := unmarshal(failed.Item, &it); err != nil {
		return nil, false, fmt.Errorf("budget window %s: %w", key.PK, err)
	}
	return &it, false, nil
}

// ReturnLapsed implements roomstate.Store: used goes down and lapsed up by
// n, in one conditional update on used >= n. When fewer are used, the
// failed condition returns the item and the call takes what is used: each
// try asks for strictly less, as ReserveBudget's do. A window whose item
// is gone (expired) has nothing to give back to.
func (s *Store) ReturnLapsed(ctx context.Context, room string, w roomstate.Window, n int64) (int64, error) {
	for n > 0 {
		expr, err := build(expression.NewBuilder().
			WithCondition(usedName.GreaterThanEqual(expression.Value(n))).
			WithUpdate(expression.
				Set(usedName, usedName.Minus(expression.Value(n))).
				Set(lapsedName, expression.Plus(lapsedName.IfNotExists(expression.Value(0)), expression.Value(n)))))
		if err != nil {
			return 0, err
		}
		it, done, err := s.returnOnce(ctx, budgetKey(room, w.Index), expr)
		if err != nil {
			return 0, err
		}
		if done {
			return n, nil
		}
		if it == nil || it.Used >= n {
			return 0, nil
		}
		n = it.Used
	}
	return 0, nil
}
