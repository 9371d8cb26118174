package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fairgate/fairgate/seats"
)

func sessionItem(sess seats.Session, version int64) (item, error) {
	raw, err := json.Marshal(sess)
	if err != nil {
		return nil, err
	}
	it := key("SESSION#" + sess.ID)
	it["data"], it["version"], it["state"], it["expiresAt"] = sv(string(raw)), nv(version), sv(string(sess.State)), ms(sess.ExpiresAt)
	return it, nil
}

// CreateSession implements seats.Store: the session, its user's live slot
// and its waiting token in one transaction.
func (s *Store) CreateSession(ctx context.Context, sess seats.Session, now time.Time, idem *seats.Idempotency) error {
	it, err := sessionItem(sess, 1)
	if err != nil {
		return err
	}
	live := key("LIVE#" + sess.UserID + "#" + sess.EventID)
	live["session"], live["expiresAt"] = sv(sess.ID), ms(sess.ExpiresAt)
	actions := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: it, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: live,
			ConditionExpression:                 aws.String("attribute_not_exists(PK) OR expiresAt <= :now"),
			ExpressionAttributeValues:           item{":now": ms(now)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
	}
	if sess.TokenID != "" {
		tok := key("TOKEN#" + sess.TokenID)
		tok["session"], tok["ttl"] = sv(sess.ID), nv(now.Add(30*24*time.Hour).Unix())
		actions = append(actions, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.tables.Reservations), Item: tok,
			ConditionExpression: aws.String("attribute_not_exists(PK)")}})
	}
	keyAt := len(actions)
	token := ""
	if idem != nil {
		put, err := s.keyPut(idem.Key, idem.Record(sess, now))
		if err != nil {
			return err
		}
		actions = append(actions, put)
		token = requestToken(idem, 0)
	}
	reasons, err := s.transact(ctx, actions, token)
	if err != nil {
		return err
	}
	switch {
	case reasons == nil:
		return nil
	case idem != nil && failed(reasons, keyAt):
		return seats.ErrKeyUsed
	case sess.TokenID != "" && failed(reasons, 2):
		return seats.ErrTokenUsed
	case failed(reasons, 1):
		return &seats.SessionExistsError{Session: getS(reasons[1].Item, "session")}
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
	if err := json.Unmarshal([]byte(getS(out.Item, "data")), &sess); err != nil {
		return sess, 0, err
	}
	return sess, getN(out.Item, "version"), nil
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
// rule implies, all in one transaction; retry with jitter when another
// write won the race for the session.
func (s *Store) change(ctx context.Context, id string, now time.Time, idem *seats.Idempotency, plan func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error)) (seats.Session, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return seats.Session{}, err
			}
		}
		sess, version, err := s.readSession(ctx, id)
		if err != nil {
			return seats.Session{}, err
		}
		updates, extra, err := plan(&sess)
		if err != nil {
			// The rule reads the session as the committed write left it: if
			// this request's key has a record, that write was this one.
			if idem != nil {
				if _, found, kerr := s.Key(ctx, idem.Key); kerr == nil && found {
					return seats.Session{}, seats.ErrKeyUsed
				}
			}
			return seats.Session{}, err
		}
		it, err := sessionItem(sess, version+1)
		if err != nil {
			return seats.Session{}, err
		}
		actions := []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(s.tables.Reservations), Item: it,
			ConditionExpression:       aws.String("version = :v"),
			ExpressionAttributeValues: item{":v": nv(version)},
		}}}
		for _, u := range updates {
			actions = append(actions, types.TransactWriteItem{Update: u.update(s.tables.Seats, sess.EventID)})
		}
		actions = append(actions, extra...)
		keyAt, token := len(actions), ""
		if idem != nil {
			put, err := s.keyPut(idem.Key, idem.Record(sess, now))
			if err != nil {
				return seats.Session{}, err
			}
			actions = append(actions, put)
			token = requestToken(idem, attempt)
		}
		reasons, err := s.transact(ctx, actions, token)
		if err != nil {
			if errors.Is(err, errConflict) && attempt < 6 {
				continue
			}
			return seats.Session{}, err
		}
		if reasons == nil {
			return sess, nil
		}
		if idem != nil && failed(reasons, keyAt) {
			return seats.Session{}, seats.ErrKeyUsed
		}
		if failed(reasons, 0) && attempt < 6 {
			continue // the session changed under us: read it again
		}
		var taken []string
		for i, u := range updates {
			if failed(reasons, i+1) {
				if reasons[i+1].Item == nil {
					return seats.Session{}, fmt.Errorf("%w: %s", seats.ErrUnknownSeat, u.seat)
				}
				taken = append(taken, u.seat)
			}
		}
		if len(taken) > 0 {
			if u := updates[0]; u.kind != lockSeat {
				return seats.Session{}, seats.ErrNotHeld
			}
			return seats.Session{}, &seats.TakenError{Seats: taken}
		}
		return seats.Session{}, fmt.Errorf("session %s kept changing: %w", id, seats.ErrThrottled)
	}
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

func (u seatUpdate) update(table, event string) *types.Update {
	names := map[string]string{"#s": "session"}
	vals := item{":sid": sv(u.session), ":locked": sv(string(seats.Locked)), ":now": ms(u.now)}
	up := &types.Update{TableName: aws.String(table), Key: seatKey(event, u.seat),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	heldByUs := "availability = :locked AND #s = :sid AND expiresAt > :now"
	switch u.kind {
	case lockSeat:
		// Available, or locked with an expired lock: lazy release.
		up.ConditionExpression = aws.String("attribute_exists(PK) AND (availability = :available OR (availability = :locked AND expiresAt <= :now))")
		up.UpdateExpression = aws.String("SET availability = :locked, #s = :sid, expiresAt = :until")
		vals[":available"], vals[":until"] = sv(string(seats.Available)), ms(u.until)
	case releaseSeat:
		up.ConditionExpression = aws.String(heldByUs)
		up.UpdateExpression = aws.String("SET availability = :available, expiresAt = :zero REMOVE #s")
		vals[":available"], vals[":zero"] = sv(string(seats.Available)), nv(0)
	case extendSeat:
		up.ConditionExpression = aws.String(heldByUs)
		up.UpdateExpression = aws.String("SET expiresAt = :until")
		vals[":until"] = ms(u.until)
	case reserveSeat:
		up.ConditionExpression = aws.String(heldByUs)
		up.UpdateExpression = aws.String("SET availability = :reserved, reservation = :r, expiresAt = :zero")
		vals[":reserved"], vals[":r"], vals[":zero"] = sv(string(seats.Reserved)), sv(u.resv), nv(0)
	}
	up.ExpressionAttributeNames, up.ExpressionAttributeValues = names, vals
	return up
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
func (s *Store) Release(ctx context.Context, session, seat string, now time.Time, idem *seats.Idempotency) (seats.Session, error) {
	return s.change(ctx, session, now, idem, func(sess *seats.Session) ([]seatUpdate, []types.TransactWriteItem, error) {
		if err := seats.ApplyRelease(sess, heldSeats(*sess, []string{seat})[0], now); err != nil {
			return nil, nil, err
		}
		return []seatUpdate{{kind: releaseSeat, seat: seat, session: sess.ID, now: now}}, nil, nil
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
		return ups, []types.TransactWriteItem{s.liveUpdate(*sess, until)}, nil
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
		return ups, []types.TransactWriteItem{s.liveUpdate(*sess, now)}, nil
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
		return ups, []types.TransactWriteItem{s.liveUpdate(*sess, now)}, nil
	})
}

// liveUpdate moves the end of the user's live slot (to now when the
// session is over, freeing it for a new one).
func (s *Store) liveUpdate(sess seats.Session, until time.Time) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.tables.Reservations), Key: key("LIVE#" + sess.UserID + "#" + sess.EventID),
		UpdateExpression:          aws.String("SET expiresAt = :until, #t = :ttl"),
		ConditionExpression:       aws.String("#s = :sid"),
		ExpressionAttributeNames:  map[string]string{"#s": "session", "#t": "ttl"},
		ExpressionAttributeValues: item{":until": ms(until), ":sid": sv(sess.ID), ":ttl": nv(until.Add(24 * time.Hour).Unix())},
	}}
}
