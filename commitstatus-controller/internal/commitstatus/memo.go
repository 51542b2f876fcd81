package commitstatus

import (
	"sync"
	"time"
)

// memo remembers, per CommitStatus key, what this process last sent and what last failed for
// good. status.syncedDigest is the durable record; the memo covers the moments when status lags
// behind: a status write that failed after the SCM call succeeded, or an informer cache that has
// not yet seen the controller's own write.
type memo struct {
	mu     sync.Mutex
	sent   map[string]sentRecord
	failed map[string]failure
}

// sentRecord is a status the SCM accepted.
type sentRecord struct {
	digest     string
	phase      string
	sha        string
	providerID string
	at         time.Time
}

// failure is a permanent SCM error for one desired state with one set of credentials. The same
// inputs are not sent again until the object changes (resourceVersions holds the version the call
// was made from and the one the controller's own status write produced), or the credentials do.
type failure struct {
	inputs           string
	resourceVersions [2]string
}

func newMemo() *memo {
	return &memo{sent: map[string]sentRecord{}, failed: map[string]failure{}}
}

func (m *memo) lastSent(key string) (sentRecord, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sent[key]
	return s, ok
}

func (m *memo) recordSent(key string, s sentRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent[key] = s
	delete(m.failed, key)
}

func (m *memo) recordFailure(key, inputs, before, after string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed[key] = failure{inputs: inputs, resourceVersions: [2]string{before, after}}
}

// failedBefore reports whether exactly these inputs already failed for good on this version of
// the object.
func (m *memo) failedBefore(key, inputs, resourceVersion string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.failed[key]
	return ok && f.inputs == inputs &&
		(f.resourceVersions[0] == resourceVersion || f.resourceVersions[1] == resourceVersion)
}

func (m *memo) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sent, key)
	delete(m.failed, key)
}
