// Package stores opens the state stores a room keeps its shared state in
// (package room settles their settings): a bolt file or a DynamoDB table.
// It is apart from package room because the DynamoDB client brings in the
// network stack, which the room's state machine does without.
package stores

import (
	"context"
	"fmt"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/boltstore"
	"github.com/fairgate/fairgate/admission/roomstate/dynamostore"
	"github.com/fairgate/fairgate/room"
)

// Open opens a settled state store: nil for memory. A bolt file
// another process holds fails after call_timeout with an error naming it.
func Open(ctx context.Context, s room.StateStore) (roomstate.Store, error) {
	timeout := time.Duration(s.CallTimeout)
	switch s.Type {
	case room.StoreBolt:
		st, err := boltstore.Open(s.Path, timeout)
		if err != nil {
			return nil, fmt.Errorf("state_store bolt: %w (is another process using it? give each its own path)", err)
		}
		return st, nil
	case room.StoreDynamo:
		st, err := dynamostore.Open(ctx, dynamostore.Config{Table: s.Table, Region: s.Region, Endpoint: s.Endpoint, Timeout: timeout})
		if err != nil {
			return nil, fmt.Errorf("state_store dynamodb: %w", err)
		}
		return st, nil
	}
	return nil, nil
}
