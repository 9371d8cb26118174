package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/fairgate/fairgate/admission/queue"
)

// HoldPlace implements roomstate.Store: one write conditioned on the
// place having no unexpired record; when it has one, the failed condition
// returns it.
func (s *Store) HoldPlace(ctx context.Context, room, id string, p queue.Place, until, now time.Time) (queue.Place, bool, error) {
	slot := int64(0)
	if !p.Slot.IsZero() {
		slot = p.Slot.UnixNano()
	}
	expr, err := build(expression.NewBuilder().
		WithCondition(expression.AttributeNotExists(pkName).
			Or(untilName.LessThanEqual(expression.Value(now.UnixMilli()))).
			Or(stateName.Equal(expression.Value(int64(queue.PlaceLapsed))))).
		WithUpdate(charged(usedBy(expression.
			Set(untilName, expression.Value(until.UnixMilli())).
			Set(ttlName, expression.Value(ttl(until))).
			Set(stateName, expression.Value(int64(p.State))).
			Set(slotName, expression.Value(slot)), p), p)))
	if err != nil {
		return queue.Place{}, false, err
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	in := s.update(usedKey(room, id), expr)
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	_, err = s.db.UpdateItem(ctx, in)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		var it placeItem
		if err := unmarshal(failed.Item, &it); err != nil {
			return queue.Place{}, false, fmt.Errorf("place %s: %w", id, err)
		}
		return it.place(), false, nil
	}
	if err != nil {
		return queue.Place{}, false, s.wrap(ctx, "holding place "+id, err)
	}
	return p, true, nil
}

// usedBy adds who used the place to an update: p's By, Pass and At when
// it has them, else removes those of an earlier record of the place.
func usedBy(u expression.UpdateBuilder, p queue.Place) expression.UpdateBuilder {
	if p.By == "" && p.Pass == "" {
		return u.Remove(byName).Remove(passName).Remove(atName)
	}
	at := int64(0)
	if !p.At.IsZero() {
		at = p.At.UnixNano()
	}
	return u.Set(byName, expression.Value(p.By)).Set(passName, expression.Value(p.Pass)).Set(atName, expression.Value(at))
}

// charged adds a reserved place's charged slot to an update, or removes
// that of an earlier record of the place.
func charged(u expression.UpdateBuilder, p queue.Place) expression.UpdateBuilder {
	if p.State != queue.PlaceReserved || p.Charged.IsZero() {
		return u.Remove(chargedName)
	}
	return u.Set(chargedName, expression.Value(p.Charged.UnixNano()))
}

// place is the queue.Place the item records.
func (it placeItem) place() queue.Place {
	p := queue.Place{State: queue.PlaceState(it.State), By: it.By, Pass: it.Pass}
	if it.Slot != 0 {
		p.Slot = time.Unix(0, it.Slot).UTC()
	}
	if it.At != 0 {
		p.At = time.Unix(0, it.At).UTC()
	}
	if it.Charged != 0 {
		p.Charged = time.Unix(0, it.Charged).UTC()
	}
	return p
}

// UsePlace implements roomstate.Store: a write conditioned on the place
// being reserved and unexpired.
func (s *Store) UsePlace(ctx context.Context, room, id string, p queue.Place, now time.Time) (bool, error) {
	expr, err := build(expression.NewBuilder().
		WithCondition(stateName.Equal(expression.Value(int64(queue.PlaceReserved))).
			And(untilName.GreaterThan(expression.Value(now.UnixMilli())))).
		WithUpdate(usedBy(expression.
			Set(stateName, expression.Value(int64(queue.PlaceUsed))).
			Set(slotName, expression.Value(0)).
			Remove(chargedName), p)))
	if err != nil {
		return false, err
	}
	return s.conditionalUpdate(ctx, usedKey(room, id), expr, "using place "+id)
}

// conditionalUpdate applies expr to key within the store's deadline,
// reporting whether its condition held.
func (s *Store) conditionalUpdate(ctx context.Context, key itemKey, expr expression.Expression, what string) (bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := s.db.UpdateItem(ctx, s.update(key, expr))
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, s.wrap(ctx, what, err)
	}
	return true, nil
}

// LookupPlace implements roomstate.Store: an expired record is absent.
func (s *Store) LookupPlace(ctx context.Context, room, id string, now time.Time) (queue.Place, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: usedKey(room, id).item(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return queue.Place{}, s.wrap(ctx, "reading place "+id, err)
	}
	if out.Item == nil {
		return queue.Place{}, nil
	}
	var it placeItem
	if err := unmarshal(out.Item, &it); err != nil {
		return queue.Place{}, fmt.Errorf("place %s: %w", id, err)
	}
	if now.UnixMilli() >= it.Until {
		return queue.Place{}, nil
	}
	return it.place(), nil
}

// LapsePlace implements roomstate.Store: one conditional update.
func (s *Store) LapsePlace(ctx context.Context, room, id string, slot, now time.Time) (bool, error) {
	expr, err := build(expression.NewBuilder().
		WithCondition(stateName.Equal(expression.Value(int64(queue.PlaceReserved))).
			And(slotName.Equal(expression.Value(slot.UnixNano()))).
			And(untilName.GreaterThan(expression.Value(now.UnixMilli())))).
		WithUpdate(expression.Set(stateName, expression.Value(int64(queue.PlaceLapsed))).Remove(chargedName)))
	if err != nil {
		return false, err
	}
	return s.conditionalUpdate(ctx, usedKey(room, id), expr, "lapsing place "+id)
}

// ReleasePlace implements roomstate.Store.
func (s *Store) ReleasePlace(ctx context.Context, room, id string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: usedKey(room, id).item()})
	return s.wrap(ctx, "releasing place "+id, err)
}
