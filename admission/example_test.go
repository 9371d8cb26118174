package admission_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// A gate in front of one room: a visitor takes a waiting token, solves its
// proof of work, and attempts admission at the checkpoint the token names.
// The room is open here, so the first attempt is admitted and the token's
// place is used: presenting it again is refused.
func Example() {
	keys, err := tokens.GenerateKeys("k1")
	if err != nil {
		panic(err)
	}
	ring, err := keys.Load(tokens.Environment{})
	if err != nil {
		panic(err)
	}
	now := time.Date(2031, 3, 9, 12, 0, 0, 0, time.UTC)
	room, err := admission.NewRoom(admission.RoomConfig{
		Name: "sale", State: admission.StateOpen, Rate: 10, Burst: 10, Tau: 2 * time.Minute, Difficulty: 8,
	}, now)
	if err != nil {
		panic(err)
	}
	gate := admission.NewGate(ring, admission.Policy{}, queue.NewMemoryLedger(1000, func() time.Time { return now }))

	ticket, err := gate.Issue(room, admission.Visitor{}, now)
	if err != nil {
		panic(err)
	}
	nonce, err := tokens.Solve(context.Background(), ticket.Claims.Ch, ticket.Claims.Dif)
	if err != nil {
		panic(err)
	}
	attempt := admission.Attempt{Token: ticket.Token, Nonce: strconv.FormatUint(nonce, 10), Now: ticket.Claims.NextAttempt()}
	first := gate.Decide(context.Background(), room, attempt)
	again := gate.Decide(context.Background(), room, attempt)
	fmt.Println(first.Outcome, first.Pass != "")
	// The same token again, as after a lost answer: the same pass.
	fmt.Println(again.Outcome, again.Pass == first.Pass)
	// Output:
	// admit true
	// admit true
}
