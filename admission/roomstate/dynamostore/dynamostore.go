// Package dynamostore is the room-state store for a cluster: one DynamoDB
// table shared by every node. Its items (pk, sk):
//
//	ROOM#<room>                 CONTROL   version, control (JSON)
//	BUDGET#<room>#<window>      W         used, ttl
//	USED#<room>#<place id>      U         until (epoch ms), state, slot (ns), ttl
//	POP#<room>                  <node>    value, until (epoch ms), ttl
//	RANK#<room>                 R         next
//
// Every change is one conditional write, so the rules hold whatever the
// concurrency: the control state is a compare-and-set on its version, the
// budget an increment conditioned on the window's limit, a used id a put
// conditioned on its absence (or expiry). `ttl` (epoch seconds) lets
// DynamoDB collect what has expired; until it does, expired items are
// treated as absent. Reads are strongly consistent.
package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/fairgate/fairgate/admission"
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

type item = map[string]types.AttributeValue

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func nv(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func fv(f float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'g', -1, 64)}
}
func ttl(t time.Time) types.AttributeValue { return nv(t.Unix() + 1) }
func key(pk, sk string) item               { return item{"pk": sv(pk), "sk": sv(sk)} }

func getS(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it item, name string) (int64, error) {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v.Value, 10, 64)
}

func getF(it item, name string) (float64, error) {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	return strconv.ParseFloat(v.Value, 64)
}

func controlKey(room string) item { return key("ROOM#"+room, "CONTROL") }
func budgetKey(room string, idx int64) item {
	return key("BUDGET#"+room+"#"+strconv.FormatInt(idx, 10), "W")
}
func usedKey(room, id string) item { return key("USED#"+room+"#"+id, "U") }
func rankKey(room string) item     { return key("RANK#"+room, "R") }

// LoadControl implements roomstate.Store.
func (s *Store) LoadControl(ctx context.Context, room string) (roomstate.Control, uint64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: controlKey(room), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return roomstate.Control{}, 0, s.wrap(ctx, "loading control state", err)
	}
	if out.Item == nil {
		return roomstate.Control{}, 0, fmt.Errorf("room %s: %w", room, roomstate.ErrNotFound)
	}
	var c roomstate.Control
	if err := json.Unmarshal([]byte(getS(out.Item, "control")), &c); err != nil {
		return roomstate.Control{}, 0, fmt.Errorf("room %s control state: %w", room, err)
	}
	v, err := getN(out.Item, "version")
	if err != nil {
		return roomstate.Control{}, 0, fmt.Errorf("room %s version: %w", room, err)
	}
	return c, uint64(v), nil
}

// SaveControl implements roomstate.Store.
func (s *Store) SaveControl(ctx context.Context, room string, c roomstate.Control, prev uint64) (uint64, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return 0, fmt.Errorf("encoding room %s control state: %w", room, err)
	}
	it := controlKey(room)
	it["control"] = sv(string(raw))
	it["version"] = nv(int64(prev + 1))
	in := &dynamodb.PutItemInput{TableName: &s.table, Item: it}
	if prev == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		in.ConditionExpression = aws.String("version = :prev")
		in.ExpressionAttributeValues = item{":prev": nv(int64(prev))}
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err = s.db.PutItem(ctx, in)
	if conditionFailed(err) {
		return 0, fmt.Errorf("room %s is not at version %d: %w", room, prev, roomstate.ErrConflict)
	}
	if err != nil {
		return 0, s.wrap(ctx, "saving control state", err)
	}
	return prev + 1, nil
}

// ReserveBudget implements roomstate.Store: an increment conditioned on
// leaving used within the limit. When a full block no longer fits, the
// failed condition returns the item, and the call asks for what is left.
func (s *Store) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n = min(n, w.Limit)
	for n > 0 {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           &s.table,
			Key:                                 budgetKey(room, w.Index),
			UpdateExpression:                    aws.String("SET used = if_not_exists(used, :zero) + :n, #ttl = :ttl"),
			ConditionExpression:                 aws.String("attribute_not_exists(used) OR used <= :most"),
			ExpressionAttributeNames:            map[string]string{"#ttl": "ttl"},
			ExpressionAttributeValues:           item{":zero": nv(0), ":n": nv(n), ":most": nv(w.Limit - n), ":ttl": ttl(w.Expires)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return n, nil
		}
		var failed *types.ConditionalCheckFailedException
		if !errors.As(err, &failed) {
			return 0, s.wrap(ctx, "reserving budget", err)
		}
		used, err := getN(failed.Item, "used")
		if err != nil {
			return 0, fmt.Errorf("room %s budget window %d: %w", room, w.Index, err)
		}
		n = min(n, w.Limit-used)
	}
	return 0, nil
}

// ReturnBudget implements roomstate.Store. A window whose item is gone
// (expired) has nothing to give back to.
func (s *Store) ReturnBudget(ctx context.Context, room string, w roomstate.Window, n int64) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       budgetKey(room, w.Index),
		UpdateExpression:          aws.String("SET used = used - :n"),
		ConditionExpression:       aws.String("used >= :n"),
		ExpressionAttributeValues: item{":n": nv(n)},
	})
	if err != nil && !conditionFailed(err) {
		return s.wrap(ctx, "returning budget", err)
	}
	return nil
}

// HoldPlace implements roomstate.Store: one write conditioned on the
// place having no unexpired record; when it has one, the failed condition
// returns it.
func (s *Store) HoldPlace(ctx context.Context, room, id string, p admission.Place, until, now time.Time) (admission.Place, bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	slot := int64(0)
	if !p.Slot.IsZero() {
		slot = p.Slot.UnixNano()
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 usedKey(room, id),
		UpdateExpression:                    aws.String("SET #until = :until, #ttl = :ttl, #state = :state, slot = :slot"),
		ConditionExpression:                 aws.String("attribute_not_exists(pk) OR #until <= :now"),
		ExpressionAttributeNames:            map[string]string{"#until": "until", "#ttl": "ttl", "#state": "state"},
		ExpressionAttributeValues:           item{":until": nv(until.UnixMilli()), ":ttl": ttl(until), ":now": nv(now.UnixMilli()), ":state": nv(int64(p.State)), ":slot": nv(slot)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		standing, err := decodePlace(failed.Item)
		if err != nil {
			return admission.Place{}, false, fmt.Errorf("place %s: %w", id, err)
		}
		return standing, false, nil
	}
	if err != nil {
		return admission.Place{}, false, s.wrap(ctx, "holding place "+id, err)
	}
	return p, true, nil
}

func decodePlace(it item) (admission.Place, error) {
	state, err := getN(it, "state")
	if err != nil {
		return admission.Place{}, err
	}
	slot, err := getN(it, "slot")
	if err != nil {
		return admission.Place{}, err
	}
	p := admission.Place{State: admission.PlaceState(state)}
	if slot != 0 {
		p.Slot = time.Unix(0, slot).UTC()
	}
	return p, nil
}

// UsePlace implements roomstate.Store.
func (s *Store) UsePlace(ctx context.Context, room, id string, now time.Time) (bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       usedKey(room, id),
		UpdateExpression:          aws.String("SET #state = :used, slot = :zero"),
		ConditionExpression:       aws.String("#state = :reserved AND #until > :now"),
		ExpressionAttributeNames:  map[string]string{"#until": "until", "#state": "state"},
		ExpressionAttributeValues: item{":used": nv(int64(admission.PlaceUsed)), ":reserved": nv(int64(admission.PlaceReserved)), ":zero": nv(0), ":now": nv(now.UnixMilli())},
	})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, s.wrap(ctx, "using place "+id, err)
	}
	return true, nil
}

// LookupPlace implements roomstate.Store.
func (s *Store) LookupPlace(ctx context.Context, room, id string, now time.Time) (admission.Place, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: usedKey(room, id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return admission.Place{}, s.wrap(ctx, "reading place "+id, err)
	}
	if out.Item == nil {
		return admission.Place{}, nil
	}
	until, err := getN(out.Item, "until")
	if err != nil {
		return admission.Place{}, fmt.Errorf("place %s: %w", id, err)
	}
	if now.UnixMilli() >= until {
		return admission.Place{}, nil
	}
	p, err := decodePlace(out.Item)
	if err != nil {
		return admission.Place{}, fmt.Errorf("place %s: %w", id, err)
	}
	return p, nil
}

// ReleasePlace implements roomstate.Store.
func (s *Store) ReleasePlace(ctx context.Context, room, id string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: usedKey(room, id)})
	return s.wrap(ctx, "releasing place "+id, err)
}

// PublishPopulation implements roomstate.Store.
func (s *Store) PublishPopulation(ctx context.Context, room, node string, value float64, until time.Time) error {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("population %v of node %s is not a number", value, node)
	}
	it := key("POP#"+room, node)
	it["value"] = fv(value)
	it["until"] = nv(until.UnixMilli())
	it["ttl"] = ttl(until)
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it})
	return s.wrap(ctx, "publishing population", err)
}

// Population implements roomstate.Store: one query over the room's
// population items.
func (s *Store) Population(ctx context.Context, room string, now time.Time) (float64, int, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var sum float64
	var nodes int
	pages := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: item{":pk": sv("POP#" + room)},
		ConsistentRead:            aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return 0, 0, s.wrap(ctx, "reading population", err)
		}
		for _, it := range page.Items {
			until, err := getN(it, "until")
			if err != nil {
				return 0, 0, fmt.Errorf("population of %s: %w", getS(it, "sk"), err)
			}
			if now.UnixMilli() >= until {
				continue
			}
			v, err := getF(it, "value")
			if err != nil {
				return 0, 0, fmt.Errorf("population of %s: %w", getS(it, "sk"), err)
			}
			sum += v
			nodes++
		}
	}
	return sum, nodes, nil
}

// ReserveRanks implements roomstate.Store: one atomic increment.
func (s *Store) ReserveRanks(ctx context.Context, room string, n int64) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       rankKey(room),
		UpdateExpression:          aws.String("SET #next = if_not_exists(#next, :zero) + :n"),
		ExpressionAttributeNames:  map[string]string{"#next": "next"},
		ExpressionAttributeValues: item{":zero": nv(0), ":n": nv(n)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, s.wrap(ctx, "reserving ranks", err)
	}
	next, err := getN(out.Attributes, "next")
	if err != nil {
		return 0, fmt.Errorf("room %s rank counter: %w", room, err)
	}
	return next - n, nil
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
