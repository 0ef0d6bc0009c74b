package store

// Maint is the maintenance of a store, beside its serving path: garbage collection (Collect,
// gc.go), the checks of fsck (Check, Fsck, and VerifyXorb's read of a xorb's data, fsck.go and
// repair.go), what the store holds (Stats, stats.go) and the upgrade of an older format
// (upgrade.go, run by Open). What a CAS serves, the quota's usage and the web view's history
// stay with Store.
//
// A Maint works on the Store it was made from and is safe for concurrent use with it: a server
// runs gc on the store it serves (Collect's two steps are safe while uploads go on).
type Maint struct {
	s *Store
}

// NewMaint returns the maintenance of s.
func NewMaint(s *Store) *Maint { return &Maint{s: s} }
