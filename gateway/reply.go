package gateway

import (
	"net/http"
	"strings"

	"github.com/fairgate/fairgate/internal/reply"
)

// The gateway's names for internal/reply's helpers, which write every JSON
// answer and error of fairgate (the seat API's too).

// errorBody is the error shape of every fairgate endpoint.
type errorBody = reply.Error

func writeJSON(w http.ResponseWriter, status int, v any) { reply.JSON(w, status, v) }

func writeError(w http.ResponseWriter, status int, code, message string) {
	reply.Fail(w, status, reply.Error{Code: code, Message: message})
}

func writeErrorReason(w http.ResponseWriter, status int, code, message, reason string) {
	reply.Fail(w, status, reply.Error{Code: code, Message: message, Reason: reason})
}

// decodeJSON reads a bounded JSON body into v, answering 413 or 400 itself.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return reply.Decode(w, r, limit, v)
}

func writeBodyError(w http.ResponseWriter, err error) { reply.BodyError(w, err) }

func allowMethod(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, "method", "method not allowed")
	return false
}
