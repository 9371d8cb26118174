//go:build !linux

package boltstore

import "os"

// fdatasync is a full sync where the platform has no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }
