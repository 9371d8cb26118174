package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Tables names the two tables.
type Tables struct {
	Seats, Reservations string
}

// DefaultTables are the tables `fairgate seats init-tables` creates.
var DefaultTables = Tables{Seats: "fairgate_seats", Reservations: "fairgate_reservations"}

// CreateTables creates both tables (on-demand capacity), the seat index,
// and the TTL attribute. Existing tables are left as they are.
func (s *Store) CreateTables(ctx context.Context) error {
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(pk, sk string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(sk), KeyType: types.KeyTypeRange}}
	}
	tables := []*dynamodb.CreateTableInput{
		{
			TableName:            aws.String(s.tables.Seats),
			AttributeDefinitions: []types.AttributeDefinition{str("PK"), str("SK"), str("GSI1PK"), str("GSI1SK")},
			KeySchema:            keys("PK", "SK"),
			BillingMode:          types.BillingModePayPerRequest,
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName: aws.String("GSI1"), KeySchema: keys("GSI1PK", "GSI1SK"),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			}},
		},
		{
			TableName:            aws.String(s.tables.Reservations),
			AttributeDefinitions: []types.AttributeDefinition{str("PK"), str("SK")},
			KeySchema:            keys("PK", "SK"),
			BillingMode:          types.BillingModePayPerRequest,
		},
	}
	for _, in := range tables {
		_, err := s.db.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("creating table %s: %w", *in.TableName, err)
		}
		waiter := dynamodb.NewTableExistsWaiter(s.db)
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, 2*time.Minute); err != nil {
			return fmt.Errorf("waiting for table %s: %w", *in.TableName, err)
		}
	}
	_, err := s.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(s.tables.Reservations),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)},
	})
	var apiErr smithy.APIError
	if err != nil && !(errors.As(err, &apiErr) && strings.Contains(apiErr.ErrorMessage(), "already enabled")) {
		return fmt.Errorf("enabling TTL: %w", err)
	}
	return nil
}
