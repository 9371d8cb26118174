// Package queue holds a waiting room's ordering mechanisms: the serving
// clock and the controller that sets its speed, the lottery threshold, the
// admission bucket and the slots it gave, the pacer that re-spaces slots
// at the current rate, and the sketch that counts distinct passes across
// nodes. Each is a value or a small locked structure over times the caller
// passes in; none reads the wall clock, and the package knows nothing of
// rooms, tokens or HTTP. Package admission composes them into a room.
package queue
