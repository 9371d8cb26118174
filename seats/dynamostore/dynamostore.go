// Package dynamostore is the seat service's DynamoDB store, for when one
// machine is not enough. Its data model (docs/DESIGN.md, "The store interface"):
//
//	Seats table         PK <event>#<seat>, SK META; GSI1 <event>#<section> /
//	                    <block>#<row>#<number>; the event itself at <event>#EVENT,
//	                    SK META, and each of its sections beside it, SK
//	                    SECTION#<index>.
//	Reservations table  SESSION#<id>, LIVE#<user>#<event> (one live session
//	                    per user and event), TOKEN#<wid> (one session per
//	                    waiting token), KEY#<idempotency key>; `ttl` collects
//	                    what is no longer needed.
//
// Times are numbers (epoch milliseconds). Every change is one
// TransactWriteItems that applies the domain's rule: session items carry a
// version for optimistic concurrency, seats carry conditions that make a
// seat lockable only when it is available or its lock has expired.
//
// Items are Go structs mapped with the SDK's attributevalue package, and
// every condition and update is built with its expression package; a
// transaction that loses a race runs again through internal/retry.
//
// By concern: tables.go (the tables), events.go (import, seat maps),
// sessions.go (sessions, holds and their transactions), keys.go
// (idempotency records), transact.go (transactions, errors, the retry
// policy), items.go (the items).
package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/seats"
)

// Store is a seats.Store on DynamoDB.
type Store struct {
	db     *dynamodb.Client
	tables Tables
}

// New returns a store over a DynamoDB client.
func New(db *dynamodb.Client, tables Tables) *Store { return &Store{db: db, tables: tables} }

// Close implements seats.Store.
func (s *Store) Close() error { return nil }

var _ seats.Store = (*Store)(nil)
