package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/fairgate/fairgate/seats"
)

var errConflict = errors.New("transaction conflict")

// transact runs a transaction. A cancellation for failed conditions is not
// an error: its reasons are returned, aligned with actions.
func (s *Store) transact(ctx context.Context, actions []types.TransactWriteItem, token string) ([]types.CancellationReason, error) {
	in := &dynamodb.TransactWriteItemsInput{TransactItems: actions}
	if token != "" {
		in.ClientRequestToken = aws.String(token)
	}
	_, err := s.db.TransactWriteItems(ctx, in)
	if err == nil {
		return nil, nil
	}
	var cancelled *types.TransactionCanceledException
	if errors.As(err, &cancelled) {
		for _, r := range cancelled.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "TransactionConflict":
				return nil, errConflict
			case "ThrottlingError", "ProvisionedThroughputExceeded":
				return nil, fmt.Errorf("transaction: %w", seats.ErrThrottled)
			}
		}
		return cancelled.CancellationReasons, nil
	}
	var conflict *types.TransactionConflictException
	if errors.As(err, &conflict) {
		return nil, errConflict
	}
	// The same ClientRequestToken with other parameters: another try of the
	// same request (with its own clock) committed or is committing.
	var mismatch *types.IdempotentParameterMismatchException
	if errors.As(err, &mismatch) {
		return nil, seats.ErrKeyUsed
	}
	return nil, s.wrap("transaction", err)
}

func failed(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

// wrap maps throttling to seats.ErrThrottled (429 with Retry-After).
func (s *Store) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded":
			return fmt.Errorf("%s: %w", what, seats.ErrThrottled)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// requestToken derives the ClientRequestToken of one transaction from the
// request's idempotency key, its try (best available) and the store's
// attempt (after a lost race for the session): the SDK's own resend of a
// transaction that committed succeeds without applying it twice.
func requestToken(idem *seats.Idempotency, attempt int) string {
	sum := sha256.Sum256([]byte(idem.Key + "#" + strconv.Itoa(idem.Attempt) + "#" + strconv.Itoa(attempt)))
	return hex.EncodeToString(sum[:16])
}

// backoff is a jittered exponential delay: 10ms, 20ms, 40ms… up to 640ms.
func backoff(attempt int) time.Duration {
	base := 10 * time.Millisecond << min(attempt, 6)
	return base/2 + time.Duration(rand.Int64N(int64(base)))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
