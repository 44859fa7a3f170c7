package protocol

// StorageHealth is the state directory's health in a live status, present
// only while the device's storage is failed or recovering (absent: ok, as
// from an agorad that does not report it). What was accepted before the
// failure stays in the store; see docs/protocol.md.
type StorageHealth struct {
	State   string `json:"state"`   // "failed" or "recovering"
	Kind    string `json:"kind"`    // read_only, io, full, gone, replaced, write
	Since   string `json:"since"`   // when the episode began (RFC 3339, ms, UTC)
	Episode uint64 `json:"episode"` // failure episodes since the daemon started
	Error   string `json:"error"`   // the error seen, e.g. "... read-only file system"
	Held    int    `json:"held"`    // utterances held in the device's memory until its store writes again
}
