package gateway

import (
	"errors"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/fairgate/fairgate/internal/bearer"
	"github.com/fairgate/fairgate/room"
)

// adminHandler serves the admin API under any prefix it is mounted at:
//
//	GET  /rooms          every room's live figures
//	GET  /rooms/{room}   one room's
//	POST /rooms/{room}   a RoomChange: state, reason, sale_start, rate, burst, difficulty, tau, capacity
//
// A non-empty token requires `Authorization: Bearer <token>`.
func adminHandler(rooms *room.Rooms, token string, now func() time.Time) http.Handler {
	return requireBearer(token, AdminAPI(rooms, now))
}

// requireBearer serves h only to requests with the bearer token, when
// token is not empty.
func requireBearer(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && !bearer.Matches(r, token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="fairgate admin"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "the admin listener needs the bearer token")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// AdminAPI answers admin requests whose path's last segments are `rooms`
// or `rooms/{room}`, under whatever the API is mounted at, without
// authentication (adminHandler adds it; the Caddy admin API has its own).
func AdminAPI(rooms *room.Rooms, now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	route(mux, "/rooms", map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		at := now()
		var out []room.RoomStatus
		for _, sh := range rooms.All() {
			out = append(out, sh.Status(at))
		}
		writeJSON(w, http.StatusOK, map[string]any{"rooms": out})
	}})
	change := inRoom(rooms, func(w http.ResponseWriter, r *http.Request, sh *room.Shared) {
		var c room.RoomChange
		if err := decodeJSON(w, r, 4096, &c); err != nil {
			return
		}
		at := now()
		if err := sh.Apply(c, at); err != nil {
			var down *room.UnavailableError
			if errors.As(err, &down) {
				w.Header().Set("Retry-After", "2")
				writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
				return
			}
			writeError(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, sh.Status(at))
	})
	route(mux, "/rooms/{room}", map[string]http.HandlerFunc{
		http.MethodGet: inRoom(rooms, func(w http.ResponseWriter, r *http.Request, sh *room.Shared) {
			writeJSON(w, http.StatusOK, sh.Status(now()))
		}),
		http.MethodPost:  change,
		http.MethodPatch: change,
	})
	notFound(mux, "/", "try /rooms")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, rest, found := strings.Cut(r.URL.Path, "/rooms")
		if !found {
			writeError(w, http.StatusNotFound, "not_found", "try /rooms")
			return
		}
		mux.ServeHTTP(w, atPath(r, path.Join("/rooms", rest)))
	})
}

// inRoom passes h the room the path names, or answers 404.
func inRoom(rooms *room.Rooms, h func(http.ResponseWriter, *http.Request, *room.Shared)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("room")
		sh, ok := rooms.Get(name)
		if !ok {
			writeError(w, http.StatusNotFound, "not_found", "no room "+name)
			return
		}
		h(w, r, sh)
	}
}

// atPath is r with its URL path replaced.
func atPath(r *http.Request, p string) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = p, ""
	r2 := r.Clone(r.Context())
	r2.URL = &u
	return r2
}
