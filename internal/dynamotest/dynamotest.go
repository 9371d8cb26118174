// Package dynamotest connects the DynamoDB stores' tests (room state,
// seats) to DynamoDB Local, which `bash .ci/test` starts and names in
// FAIRGATE_DYNAMODB_ENDPOINT.
package dynamotest

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Client is a client of DynamoDB Local. Without the endpoint the test is
// skipped, but under CI it fails: the DynamoDB suites are never silently
// skipped there.
func Client(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	endpoint := os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("FAIRGATE_DYNAMODB_ENDPOINT is unset: CI must run the DynamoDB suite (bash .ci/test starts DynamoDB Local)")
		}
		t.Skip("FAIRGATE_DYNAMODB_ENDPOINT unset; `bash .ci/test` starts DynamoDB Local and runs this")
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("fairgate", "local", ""),
	}, optFns...)
}
