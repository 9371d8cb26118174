// Package queue holds a waiting room's ordering mechanisms: the serving
// clock and the controller that sets its speed, the lottery threshold, the
// admission bucket and the slots it gave, the pacer that re-spaces slots
// at the current rate, the place ledger that lets each place admit once,
// and the sketch that counts distinct passes across nodes.
//
// Each works on the times its caller gives it and reads no clock of its
// own. The package knows nothing of rooms, tokens or HTTP: package
// admission composes these mechanisms into a room and its decision.
package queue
