package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// budgetReader reads the shared admission budget straight from the table
// (dynamostore's items `BUDGET#<room>#<window>` / `W`, attribute `used`),
// so the driver can compare what the nodes reserved with what the crowd
// was admitted. It knows the item layout on purpose: it is a witness, not
// a client of the store.
type budgetReader struct {
	db    *dynamodb.Client
	table string
}

func newBudgetReader(endpoint, table string) *budgetReader {
	db := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("fairgate", "local", ""),
	})
	return &budgetReader{db: db, table: table}
}

// used returns the admissions reserved in each one-second window of
// [from, to) (whole seconds; windows never written read 0). Budget windows
// last burst/rate seconds, at least one (roomstate.WindowFor): the driver
// keeps burst equal to the rate, so they are whole seconds of Unix time.
func (b *budgetReader) used(ctx context.Context, room string, from, to time.Time) ([]int64, error) {
	var out []int64
	for sec := from.Unix(); sec < to.Unix(); sec++ {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := b.db.GetItem(callCtx, &dynamodb.GetItemInput{
			TableName:      aws.String(b.table),
			ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: "BUDGET#" + room + "#" + strconv.FormatInt(sec, 10)},
				"sk": &types.AttributeValueMemberS{Value: "W"},
			},
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("reading the budget of second %d: %w", sec, err)
		}
		var n int64
		if v, ok := res.Item["used"].(*types.AttributeValueMemberN); ok {
			n, _ = strconv.ParseInt(v.Value, 10, 64)
		}
		out = append(out, n)
	}
	return out, nil
}
