package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fairgate/fairgate/seats"
)

// keyPut is the transaction's write of an idempotency record (its JSON,
// data): only if the key has none yet.
func (s *Store) keyPut(k string, claimedAt time.Time, data []byte) (types.TransactWriteItem, error) {
	it, create, err := s.keyItem(k, claimedAt, data)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.tables.Reservations), Item: it,
		ConditionExpression: create.Condition(), ExpressionAttributeNames: create.Names(),
	}}, nil
}

// keyItem is the item of a record (its JSON, data) and the condition that
// creates it.
func (s *Store) keyItem(k string, claimedAt time.Time, data []byte) (item, expression.Expression, error) {
	it, err := marshal(keyItem{itemKey: itemKey{PK: "KEY#" + k, SK: meta}, Data: string(data), TTL: claimedAt.Add(seats.KeyTTL).Unix()})
	if err != nil {
		return nil, expression.Expression{}, err
	}
	create, err := build(expression.NewBuilder().WithCondition(notExists))
	return it, create, err
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
	var it keyItem
	if err := unmarshal(out.Item, &it); err != nil {
		return rec, false, fmt.Errorf("idempotency record %s: %w", k, err)
	}
	if err := json.Unmarshal([]byte(it.Data), &rec); err != nil {
		return rec, false, fmt.Errorf("idempotency record %s: %w", k, err)
	}
	return rec, true, nil
}

// PutKey implements seats.Store.
func (s *Store) PutKey(ctx context.Context, k string, rec seats.KeyRecord) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding idempotency record: %w", err)
	}
	it, create, err := s.keyItem(k, rec.ClaimedAt, raw)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.Reservations), Item: it,
		ConditionExpression: create.Condition(), ExpressionAttributeNames: create.Names(),
	})
	var failedCheck *types.ConditionalCheckFailedException
	if errors.As(err, &failedCheck) {
		return seats.ErrKeyUsed
	}
	return s.wrap("storing idempotency record", err)
}
