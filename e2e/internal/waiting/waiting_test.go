package waiting

import (
	"context"
	"encoding/json"
	"github.com/fairgate/fairgate/admission/tokens"
	"testing"
	"time"
)

func TestFollow(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         Answer
	}{
		{"a new token", `{"token":"t2","challenge":"c2","difficulty":3,"retry_after":1.5,"outcome":"deferred"}`,
			Answer{Token: "t2", Challenge: "c2", Difficulty: 3, RetryAfter: 1.5, Outcome: "deferred"}},
		{"the busy answer", `{"retry_after":0.25}`, Answer{Token: "t1", Challenge: "c1", Difficulty: 2, RetryAfter: 0.25}},
		{"not JSON", `<html>`, Answer{Token: "t1", Challenge: "c1", Difficulty: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := Answer{Token: "t1", Challenge: "c1", Difficulty: 2, RetryAfter: 9}
			tk.Follow([]byte(tc.answer))
			if tk.Token != tc.want.Token || tk.Challenge != tc.want.Challenge || tk.Difficulty != tc.want.Difficulty || tk.RetryAfter != tc.want.RetryAfter || tk.Outcome != tc.want.Outcome {
				t.Errorf("after %s: %+v, want %+v", tc.answer, tk, tc.want)
			}
		})
	}
}

func TestSolve(t *testing.T) {
	tk := Answer{Token: "tok", Challenge: "AAAAAAAAAAAAAAAAAAAAAA", Difficulty: 8, RetryAfter: 0.5}
	if tk.Wait() != 500*time.Millisecond {
		t.Errorf("Wait = %v", tk.Wait())
	}
	nonce, body, err := tk.Solve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(body, &got); err != nil || got["token"] != "tok" || got["nonce"] != nonce {
		t.Fatalf("admit body %s (%v), nonce %s", body, err, nonce)
	}
	if err := tokens.VerifyWork(tk.Challenge, tk.Difficulty, nonce); err != nil {
		t.Errorf("nonce %s: %v", nonce, err)
	}
}
