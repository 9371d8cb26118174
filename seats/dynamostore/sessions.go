package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fairgate/fairgate/internal/retry"
	"github.com/fairgate/fairgate/seats"
)

// newSessionItem is a session's item at version and, with idem, the
// transaction's write of its idempotency record, the session encoded once
// for both.
func (s *Store) newSessionItem(sess seats.Session, version int64, now time.Time, idem *seats.Idempotency) (item, *types.TransactWriteItem, error) {
	raw, err := json.Marshal(sess)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding session: %w", err)
	}
	var put *types.TransactWriteItem
	if idem != nil {
		rec, err := idem.EncodeRecord(raw, now)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding idempotency record: %w", err)
		}
		p, err := s.keyPut(idem.Key, now, rec)
		if err != nil {
			return nil, nil, err
		}
		put = &p
	}
	it, err := marshal(sessionItem{itemKey: itemKey{PK: "SESSION#" + sess.ID, SK: meta}, Data: string(raw), Version: version, State: string(sess.State), ExpiresAt: ms(sess.ExpiresAt)})
	return it, put, err
}

// CreateSession implements seats.Store: the session, its user's live slot
// and its waiting token in one transaction.
func (s *Store) CreateSession(ctx context.Context, sess seats.Session, now time.Time, idem *seats.Idempotency) error {
	it, keyPut, err := s.newSessionItem(sess, 1, now, idem)
	if err != nil {
		return err
	}
	live, err := marshal(liveItem{itemKey: itemKey{PK: "LIVE#" + sess.UserID + "#" + sess.EventID, SK: meta}, Session: sess.ID, ExpiresAt: ms(sess.ExpiresAt)})
	if err != nil {
		return err
	}
	create, err := build(expression.NewBuilder().WithCondition(notExists))
	if err != nil {
		return err
	}
	// The user's slot is free, or its session is over.
	free, err := build(expression.NewBuilder().WithCondition(notExists.Or(expression.Name("expiresAt").LessThanEqual(expression.Value(ms(now))))))
	if err != nil {
		return err
	}
	actions := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: it, ConditionExpression: create.Condition(), ExpressionAttributeNames: create.Names()}},
		{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: live,
			ConditionExpression: free.Condition(), ExpressionAttributeNames: free.Names(), ExpressionAttributeValues: free.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
	}
	if sess.TokenID != "" {
		tok, err := marshal(tokenItem{itemKey: itemKey{PK: "TOKEN#" + sess.TokenID, SK: meta}, Session: sess.ID, TTL: now.Add(30 * 24 * time.Hour).Unix()})
		if err != nil {
			return err
		}
		actions = append(actions, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: tok,
			ConditionExpression: create.Condition(), ExpressionAttributeNames: create.Names()}})
	}
	keyAt := len(actions)
	clientToken := ""
	if keyPut != nil {
		actions = append(actions, *keyPut)
		clientToken = requestToken(idem, 0)
	}
	reasons, err := s.transact(ctx, actions, clientToken)
	if err != nil {
		return conflictIsThrottling(err)
	}
	switch {
	case reasons == nil:
		return nil
	case idem != nil && failed(reasons, keyAt):
		return seats.ErrKeyUsed
	case sess.TokenID != "" && failed(reasons, 2):
		return seats.ErrTokenUsed
	case failed(reasons, 1):
		var other liveItem
		_ = unmarshal(reasons[1].Item, &other) // a slot without its session still names the error
		return &seats.SessionExistsError{Session: other.Session}
	default:
		return fmt.Errorf("creating session: %w", seats.ErrExists)
	}
}

// Session implements seats.Store.
func (s *Store) Session(ctx context.Context, id string) (seats.Session, error) {
	sess, _, err := s.readSession(ctx, id)
	return sess, err
}

func (s *Store) readSession(ctx context.Context, id string) (seats.Session, int64, error) {
	var sess seats.Session
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.Reservations), Key: key("SESSION#" + id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return sess, 0, s.wrap("reading session", err)
	}
	if out.Item == nil {
		return sess, 0, fmt.Errorf("session %s: %w", id, seats.ErrNotFound)
	}
	var it sessionItem
	if err := unmarshal(out.Item, &it); err != nil {
		return sess, 0, fmt.Errorf("session %s: %w", id, err)
	}
	if err := json.Unmarshal([]byte(it.Data), &sess); err != nil {
		return sess, 0, fmt.Errorf("session %s: %w", id, err)
	}
	return sess, it.Version, nil
}

// heldSeats stands in for the seats a session names, as the rules see them
// before the write: the session's own seats locked by it until its
// deadline, the others available. The write's conditions then check the
// seats themselves.
func heldSeats(sess seats.Session, ids []string) []*seats.Seat {
	out := make([]*seats.Seat, len(ids))
	for i, id := range ids {
		st := &seats.Seat{ID: id, Status: seats.Available}
		for _, held := range sess.Seats {
			if held == id {
				st.Status, st.Session, st.ExpiresAt = seats.Locked, sess.ID, sess.ExpiresAt
			}
		}
		out[i] = st
	}
	return out
}

// change is one session change: read the session, apply the rule to it,
// write the session (if its version is unchanged) and the seat updates the
// rule implies, all in one transaction; run again (conflictRetry) when
// another write won the race for the session.
func (s *Store) change(ctx context.Context, id string, now time.Time, idem *seats.Idempotency, plan func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error)) (seats.Session, error) {
	var out seats.Session
	err := retry.Do(ctx, conflictRetry, isConflict, func(try int) error {
		sess, version, err := s.readSession(ctx, id)
		if err != nil {
			return err
		}
		updates, extra, err := plan(&sess)
		if err != nil {
			// The rule reads the session as the committed write left it: if
			// this request's key has a record, that write was this one.
			if idem != nil {
				if _, found, kerr := s.Key(ctx, idem.Key); kerr == nil && found {
					return seats.ErrKeyUsed
				}
			}
			return err
		}
		it, keyPut, err := s.newSessionItem(sess, version+1, now, idem)
		if err != nil {
			return err
		}
		unchanged, err := build(expression.NewBuilder().WithCondition(expression.Name("version").Equal(expression.Value(version))))
		if err != nil {
			return err
		}
		actions := []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(s.tables.Reservations), Item: it,
			ConditionExpression: unchanged.Condition(), ExpressionAttributeNames: unchanged.Names(), ExpressionAttributeValues: unchanged.Values(),
		}}}
		for _, u := range updates {
			up, err := u.update(s.tables.Seats, sess.EventID)
			if err != nil {
				return err
			}
			actions = append(actions, types.TransactWriteItem{Update: up})
		}
		actions = append(actions, extra...)
		keyAt, clientToken := len(actions), ""
		if keyPut != nil {
			actions = append(actions, *keyPut)
			clientToken = requestToken(idem, try)
		}
		reasons, err := s.transact(ctx, actions, clientToken)
		switch {
		case err != nil:
			return err
		case reasons == nil:
			out = sess
			return nil
		case idem != nil && failed(reasons, keyAt):
			return seats.ErrKeyUsed
		case failed(reasons, 0):
			return fmt.Errorf("session %s changed: %w", id, errConflict) // read it again
		}
		var taken []string
		for i, u := range updates {
			if failed(reasons, i+1) {
				if reasons[i+1].Item == nil {
					return fmt.Errorf("%w: %s", seats.ErrUnknownSeat, u.seat)
				}
				taken = append(taken, u.seat)
			}
		}
		if len(taken) > 0 {
			if u := updates[0]; u.kind != lockSeat {
				return seats.ErrNotHeld
			}
			return &seats.TakenError{Seats: taken}
		}
		return fmt.Errorf("session %s: the transaction was cancelled for no reason of its own: %w", id, seats.ErrThrottled)
	})
	if err != nil {
		return seats.Session{}, conflictIsThrottling(err)
	}
	return out, nil
}

type updateKind int

const (
	lockSeat updateKind = iota
	releaseSeat
	extendSeat
	reserveSeat
)

// seatUpdate is one conditional seat write.
type seatUpdate struct {
	kind    updateKind
	seat    string
	session string
	now     time.Time
	until   time.Time
	resv    string
}

func (u seatUpdate) update(table, event string) (*types.Update, error) {
	var (
		availability, session, expiresAt = expression.Name("availability"), expression.Name("session"), expression.Name("expiresAt")
		locked, now                      = expression.Value(string(seats.Locked)), expression.Value(ms(u.now))
		heldByUs                         = availability.Equal(locked).And(session.Equal(expression.Value(u.session)), expiresAt.GreaterThan(now))
		cond                             expression.ConditionBuilder
		set                              expression.UpdateBuilder
	)
	switch u.kind {
	case lockSeat:
		// Available, or locked with an expired lock: lazy release.
		cond = expression.AttributeExists(expression.Name("PK")).And(
			availability.Equal(expression.Value(string(seats.Available))).Or(availability.Equal(locked).And(expiresAt.LessThanEqual(now))))
		set = expression.Set(availability, locked).Set(session, expression.Value(u.session)).Set(expiresAt, expression.Value(ms(u.until)))
	case releaseSeat:
		cond = heldByUs
		set = expression.Set(availability, expression.Value(string(seats.Available))).Set(expiresAt, expression.Value(0)).Remove(session)
	case extendSeat:
		cond = heldByUs
		set = expression.Set(expiresAt, expression.Value(ms(u.until)))
	case reserveSeat:
		cond = heldByUs
		set = expression.Set(availability, expression.Value(string(seats.Reserved))).Set(expression.Name("reservation"), expression.Value(u.resv)).Set(expiresAt, expression.Value(0))
	}
	expr, err := build(expression.NewBuilder().WithCondition(cond).WithUpdate(set))
	if err != nil {
		return nil, err
	}
	return &types.Update{
		TableName: aws.String(table), Key: seatKey(event, u.seat),
		ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// Hold implements seats.Store.
func (s *Store) Hold(ctx context.Context, h seats.Hold) (seats.Session, error) {
	return s.change(ctx, h.Session, h.Now, h.Key, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		before := len(sess.Seats)
		if err := seats.ApplyHold(sess, heldSeats(*sess, h.Seats), h); err != nil {
			return nil, nil, err
		}
		var ups []seatUpdate
		for _, id := range sess.Seats[before:] {
			ups = append(ups, seatUpdate{kind: lockSeat, seat: id, session: sess.ID, now: h.Now, until: sess.ExpiresAt})
		}
		return ups, nil, nil
	})
}

// Release implements seats.Store.
func (s *Store) Release(ctx context.Context, r seats.Release) (seats.Session, error) {
	return s.change(ctx, r.Session, r.Now, r.Key, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		if err := seats.ApplyRelease(sess, heldSeats(*sess, []string{r.Seat})[0], r); err != nil {
			return nil, nil, err
		}
		return []seatUpdate{{kind: releaseSeat, seat: r.Seat, session: sess.ID, now: r.Now}}, nil, nil
	})
}

// Checkout implements seats.Store; the live slot lasts as long as the checkout.
func (s *Store) Checkout(ctx context.Context, session string, now, until time.Time, idem *seats.Idempotency) (seats.Session, error) {
	return s.change(ctx, session, now, idem, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		if err := seats.ApplyCheckout(sess, heldSeats(*sess, sess.Seats), now, until); err != nil {
			return nil, nil, err
		}
		var ups []seatUpdate
		for _, id := range sess.Seats {
			ups = append(ups, seatUpdate{kind: extendSeat, seat: id, session: sess.ID, now: now, until: until})
		}
		live, err := s.liveUpdate(*sess, until)
		return ups, []types.TransactWriteItem{live}, err
	})
}

// Confirm implements seats.Store.
func (s *Store) Confirm(ctx context.Context, session, reservation, paymentRef string, now time.Time, idem *seats.Idempotency) (seats.Session, error) {
	return s.change(ctx, session, now, idem, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		if err := seats.ApplyConfirm(sess, heldSeats(*sess, sess.Seats), reservation, paymentRef, now); err != nil {
			return nil, nil, err
		}
		var ups []seatUpdate
		for _, id := range sess.Seats {
			ups = append(ups, seatUpdate{kind: reserveSeat, seat: id, session: sess.ID, now: now, resv: reservation})
		}
		live, err := s.liveUpdate(*sess, now)
		return ups, []types.TransactWriteItem{live}, err
	})
}

// Cancel implements seats.Store.
func (s *Store) Cancel(ctx context.Context, session string, now time.Time, idem *seats.Idempotency) (seats.Session, error) {
	return s.change(ctx, session, now, idem, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		held := sess.Seats
		if err := seats.ApplyCancel(sess, heldSeats(*sess, held), now); err != nil {
			return nil, nil, err
		}
		var ups []seatUpdate
		for _, id := range held {
			ups = append(ups, seatUpdate{kind: releaseSeat, seat: id, session: sess.ID, now: now})
		}
		live, err := s.liveUpdate(*sess, now)
		return ups, []types.TransactWriteItem{live}, err
	})
}

// liveUpdate moves the end of the user's live slot (to now when the
// session is over, freeing it for a new one).
func (s *Store) liveUpdate(sess seats.Session, until time.Time) (types.TransactWriteItem, error) {
	expr, err := build(expression.NewBuilder().
		WithCondition(expression.Name("session").Equal(expression.Value(sess.ID))).
		WithUpdate(expression.Set(expression.Name("expiresAt"), expression.Value(ms(until))).Set(expression.Name("ttl"), expression.Value(until.Add(24*time.Hour).Unix()))))
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.tables.Reservations), Key: key("LIVE#" + sess.UserID + "#" + sess.EventID),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, nil
}
