// Command roomstate-cost counts the DynamoDB requests a cluster's room
// state costs per admission and per node-second, at several budget block
// sizes, on a fresh table it creates and deletes, printing one row of
// docs/SCALING.md's table for each block:
//
//	go run ./bench/roomstate-cost -endpoint http://127.0.0.1:PORT
//	go run ./bench/roomstate-cost -seconds 10 -blocks 1,4   # a small run
//
// Three nodes (-share 0.6,0.3,0.1) face a crowd of -crowd × -rate attempts
// a second for -seconds of injected time; see package
// admission/roomstate/dynamostore/cost. The figures are counts, not
// timings: they do not depend on the machine, only on the load's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/dynamostore"
	"github.com/fairgate/fairgate/admission/roomstate/dynamostore/cost"
)

func main() {
	endpoint := flag.String("endpoint", os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT"), "DynamoDB endpoint (DynamoDB Local)")
	rate := flag.Float64("rate", 100, "target admissions a second (each one-second window's limit)")
	seconds := flag.Int("seconds", 60, "seconds of injected time")
	crowd := flag.Float64("crowd", 1.2, "attempts a second, as a multiple of -rate")
	shares := flag.String("share", "0.6,0.3,0.1", "each node's share of the crowd")
	blocks := flag.String("blocks", "1,5,10,25", "budget block sizes, one run each")
	flag.Parse()
	if err := run(*endpoint, *rate, *seconds, *crowd, *shares, *blocks); err != nil {
		fmt.Fprintln(os.Stderr, "roomstate-cost:", err)
		os.Exit(1)
	}
}

func run(endpoint string, rate float64, seconds int, crowd float64, shares, blocks string) error {
	if endpoint == "" {
		return errors.New("no -endpoint (or FAIRGATE_DYNAMODB_ENDPOINT): start DynamoDB Local as .ci/test does")
	}
	share, err := floats(shares)
	if err != nil {
		return fmt.Errorf("-share: %w", err)
	}
	sizes, err := ints(blocks)
	if err != nil {
		return fmt.Errorf("-blocks: %w", err)
	}
	if rate < 1 || seconds < 1 || crowd <= 0 {
		return errors.New("-rate must be at least 1, -seconds at least 1, -crowd positive")
	}
	client := func(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
		return dynamodb.New(dynamodb.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(endpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("fairgate", "local", ""),
		}, optFns...)
	}
	ctx := context.Background()
	fmt.Printf("%d nodes (shares %s), rate %g/s, crowd %g × rate, %d s of injected time\n\n", len(share), shares, rate, crowd, seconds)
	fmt.Println("| Block size | Admitted of allowed | Ledger requests / admission | Budget requests / admission | Budget requests / window | Requests / node-second |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, block := range sizes {
		table := fmt.Sprintf("roomstate_cost_%d", rand.Int64())
		if err := dynamostore.New(client(), table, 10*time.Second).CreateTable(ctx); err != nil {
			return err
		}
		load := cost.Load{Rate: rate, Seconds: seconds, Share: share, Crowd: crowd, Block: block,
			Start: time.Now().UTC().Truncate(time.Hour).Add(time.Hour)}
		r, err := cost.Run(ctx, func(option func(*dynamodb.Options)) (roomstate.Store, error) {
			return dynamostore.New(client(option), table, 10*time.Second), nil
		}, load)
		if _, derr := client().DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); derr != nil {
			fmt.Fprintf(os.Stderr, "roomstate-cost: deleting table %s: %v\n", table, derr)
		}
		if err != nil {
			return fmt.Errorf("block %d: %w", block, err)
		}
		allowed := int(rate) * seconds
		ticks := cost.Sum(r.Ticks) - 1 // less the room's creation
		fmt.Printf("| %d | %d of %d (%.0f %%) | %.3f | %.3f | %.0f | %.2f |\n", block, r.Admissions, allowed,
			100*float64(r.Admissions)/float64(allowed),
			float64(cost.Sum(r.Ledger))/float64(r.Admissions), float64(cost.Sum(r.Budget))/float64(r.Admissions),
			float64(cost.Sum(r.Budget))/float64(seconds), float64(ticks)/float64(seconds*len(share)))
		for _, s := range r.Strays(load) {
			fmt.Fprintln(os.Stderr, "roomstate-cost: budget not held:", s)
		}
	}
	return nil
}

func floats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func ints(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}
