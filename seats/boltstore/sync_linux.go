package boltstore

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data and what reading it back needs (its size),
// not its other metadata.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
