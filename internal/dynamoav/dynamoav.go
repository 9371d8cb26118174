// Package dynamoav maps Go values to DynamoDB items and builds expressions
// with the AWS SDK's attributevalue and expression packages, with the
// errors both of fairgate's DynamoDB stores (room state, seats) report.
package dynamoav

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is a DynamoDB item.
type Item = map[string]types.AttributeValue

// Marshal maps v to an item.
func Marshal(v any) (Item, error) {
	it, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, fmt.Errorf("mapping %T: %w", v, err)
	}
	return it, nil
}

// Unmarshal maps an item to v.
func Unmarshal(it Item, v any) error {
	if err := attributevalue.UnmarshalMap(it, v); err != nil {
		return fmt.Errorf("reading %T: %w", v, err)
	}
	return nil
}

// Build builds an expression; the stores' builders are constant in shape,
// so an error is a programming error, reported as such.
func Build(b expression.Builder) (expression.Expression, error) {
	expr, err := b.Build()
	if err != nil {
		return expr, fmt.Errorf("building an expression: %w", err)
	}
	return expr, nil
}
