package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fairgate/fairgate/seats"
)

// keyPut is the transaction's write of an idempotency record: only if the
// key has none yet.
func (s *Store) keyPut(k string, rec seats.KeyRecord) (types.TransactWriteItem, error) {
	it, err := keyItem(k, rec)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.tables.Reservations), Item: it,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	}}, nil
}

func keyItem(k string, rec seats.KeyRecord) (item, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encoding idempotency record: %w", err)
	}
	it := key("KEY#" + k)
	it["data"], it["ttl"] = sv(string(raw)), nv(rec.ClaimedAt.Add(seats.KeyTTL).Unix())
	return it, nil
}

// Key implements seats.Store.
func (s *Store) Key(ctx context.Context, k string) (seats.KeyRecord, bool, error) {
	var rec seats.KeyRecord
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.tables.Reservations), Key: key("KEY#" + k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return rec, false, s.wrap("reading idempotency record", err)
	}
	if out.Item == nil {
		return rec, false, nil
	}
	if err := json.Unmarshal([]byte(getS(out.Item, "data")), &rec); err != nil {
		return rec, false, fmt.Errorf("idempotency record %s: %w", k, err)
	}
	return rec, true, nil
}

// PutKey implements seats.Store.
func (s *Store) PutKey(ctx context.Context, k string, rec seats.KeyRecord) error {
	it, err := keyItem(k, rec)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.Reservations), Item: it,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	var failedCheck *types.ConditionalCheckFailedException
	if errors.As(err, &failedCheck) {
		return seats.ErrKeyUsed
	}
	return s.wrap("storing idempotency record", err)
}
