// Package dynamostore is the room-state store for a cluster: one DynamoDB
// table shared by every node. Its items (pk, sk):
//
//	ROOM#<room>                 CONTROL   version, control (JSON)
//	BUDGET#<room>#<window>      W         used, ttl
//	USED#<room>#<place id>      U         until (epoch ms), state, slot (ns), ttl, [charged (ns)]
//	POP#<room>                  <node>    value, until (epoch ms), ttl
//	SKETCH#<room>               <node>    sketch (bytes), until (epoch ms), ttl
//	RANK#<room>                 R         next
//
// Every change is one conditional write, so the rules hold whatever the
// concurrency: the control state is a compare-and-set on its version, the
// budget an increment conditioned on the window's limit, a used id a put
// conditioned on its absence (or expiry). `ttl` (epoch seconds) lets
// DynamoDB collect what has expired; until it does, expired items are
// treated as absent. Reads are strongly consistent.
//
// Items are mapped with the SDK's attributevalue (items.go) and every
// condition, update and key condition is built with its expression
// package. One file per concern: control.go (the compare-and-set),
// budget.go, places.go (the ledger), population.go (and the sketches),
// ranks.go; this file opens the store and creates the table.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/fairgate/fairgate/admission/roomstate"
)

// DefaultTable is the table `init-tables` creates when none is named.
const DefaultTable = "fairgate_rooms"

// Config locates the table. Credentials come from the AWS SDK's standard
// chain (environment, shared config, instance role).
type Config struct {
	// Table is the table name; default DefaultTable.
	Table string `json:"table,omitempty"`
	// Region is the AWS region; default the SDK's (AWS_REGION), else us-east-1.
	Region string `json:"region,omitempty"`
	// Endpoint overrides the service endpoint, e.g. DynamoDB Local.
	Endpoint string `json:"endpoint,omitempty"`
	// Timeout bounds every call; default roomstate.DefaultCallTimeout.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Store is a roomstate.Store on one DynamoDB table.
type Store struct {
	db      *dynamodb.Client
	table   string
	timeout time.Duration
}

// Open loads the SDK's standard configuration and returns a store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	opts := []func(*awsconfig.LoadOptions) error{}
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	aws, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if aws.Region == "" {
		aws.Region = "us-east-1"
	}
	client := dynamodb.NewFromConfig(aws, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = &cfg.Endpoint
		}
	})
	return New(client, cfg.Table, cfg.Timeout), nil
}

// New returns a store over a client; empty table and zero timeout take
// their defaults.
func New(client *dynamodb.Client, table string, timeout time.Duration) *Store {
	if table == "" {
		table = DefaultTable
	}
	if timeout <= 0 {
		timeout = roomstate.DefaultCallTimeout
	}
	return &Store{db: client, table: table, timeout: timeout}
}

// Close implements roomstate.Store.
func (s *Store) Close() error { return nil }

// CreateTable creates the table (on-demand capacity) and enables TTL on
// `ttl`. An existing table is left as it is.
func (s *Store) CreateTable(ctx context.Context) error {
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	_, err := s.db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(s.table),
		AttributeDefinitions: []types.AttributeDefinition{str("pk"), str("sk")},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("creating table %s: %w", s.table, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(s.db)
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)}, 2*time.Minute); err != nil {
		return fmt.Errorf("waiting for table %s: %w", s.table, err)
	}
	_, err = s.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(s.table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)},
	})
	var apiErr smithy.APIError
	if err != nil && !(errors.As(err, &apiErr) && strings.Contains(apiErr.ErrorMessage(), "already enabled")) {
		return fmt.Errorf("enabling TTL on %s: %w", s.table, err)
	}
	return nil
}

// deadline bounds one call.
func (s *Store) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

func conditionFailed(err error) bool {
	var failed *types.ConditionalCheckFailedException
	return errors.As(err, &failed)
}

// wrap adds context to a failed call, naming the deadline or cancellation
// when that is what ended it.
func (s *Store) wrap(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%s: %w (%w)", what, cerr, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

var _ roomstate.Store = (*Store)(nil)
