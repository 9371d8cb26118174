package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/fairgate/fairgate/internal/retry"
	"github.com/fairgate/fairgate/seats"
)

var errConflict = errors.New("transaction conflict")

// transact runs a transaction, with clientToken (if any) as its
// ClientRequestToken. A cancellation for failed conditions is not
// an error: its reasons are returned, aligned with actions.
func (s *Store) transact(ctx context.Context, actions []types.TransactWriteItem, clientToken string) ([]types.CancellationReason, error) {
	in := &dynamodb.TransactWriteItemsInput{TransactItems: actions}
	if clientToken != "" {
		in.ClientRequestToken = aws.String(clientToken)
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
// request's idempotency key, its attempt (best available) and the store's
// try (after a lost race for the session): the SDK's own resend of a
// transaction that committed succeeds without applying it twice.
func requestToken(idem *seats.Idempotency, try int) string {
	sum := sha256.Sum256([]byte(idem.Key + "#" + strconv.Itoa(idem.Attempt) + "#" + strconv.Itoa(try)))
	return hex.EncodeToString(sum[:16])
}

// conflictRetry bounds the re-runs of a transaction that lost a race
// (another write changed the session, or DynamoDB cancelled it as a
// conflict): 7 tries, pausing about 20ms, 40ms, … up to 640ms.
var conflictRetry = retry.Policy{Tries: 7, Base: 20 * time.Millisecond, Max: 640 * time.Millisecond}

func isConflict(err error) bool { return errors.Is(err, errConflict) }

// conflictIsThrottling reports a race lost on every try as throttling: the
// client may retry shortly (429 with Retry-After).
func conflictIsThrottling(err error) error {
	if isConflict(err) {
		return fmt.Errorf("%w: %w", err, seats.ErrThrottled)
	}
	return err
}
