package metrics

import (
	"reflect"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Conditions exports the kstatus conditions of every object in the caches it tracks, read at
// scrape time, so the series are never stale and an alert on a Stalled object or a blocked
// ProposedCommit needs no code in any reconciler:
//
//	sluice_object_condition{kind, namespace, name, type, status, reason} 1
//
// A standby replica's caches are warm too, so it reports the same series as the leader; alerts
// aggregate with max by (kind, namespace, name).
type Conditions struct {
	mu     sync.Mutex
	stores []cache.Store
}

var conditionDesc = prometheus.NewDesc("sluice_object_condition",
	"Conditions of the Sluice objects this controller watches: 1 for each condition, labelled with its type, status and reason.",
	[]string{"kind", "namespace", "name", "type", "status", "reason"}, nil)

// Track adds caches whose objects are reported. Objects without status.conditions are skipped.
func (c *Conditions) Track(stores ...cache.Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stores = append(c.stores, stores...)
}

func (c *Conditions) Describe(ch chan<- *prometheus.Desc) { ch <- conditionDesc }

func (c *Conditions) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	stores := append([]cache.Store(nil), c.stores...)
	c.mu.Unlock()
	for _, store := range stores {
		for _, obj := range store.List() {
			collectObject(ch, obj)
		}
	}
}

func collectObject(ch chan<- prometheus.Metric, obj any) {
	conds, kind, ok := conditionsOf(obj)
	if !ok {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	for _, cond := range conds {
		ch <- prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, 1,
			kind, m.GetNamespace(), m.GetName(), cond.Type, string(cond.Status), cond.Reason)
	}
}

var conditionsType = reflect.TypeFor[[]metav1.Condition]()

// conditionsOf reads status.conditions of a typed API object (a pointer to a struct with a Status
// struct holding Conditions []metav1.Condition), and its kind, the Go type's name: every Sluice
// kind has this shape, and informer caches hold typed objects without their TypeMeta.
func conditionsOf(obj any) ([]metav1.Condition, string, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, "", false
	}
	status := v.Elem().FieldByName("Status")
	if status.Kind() != reflect.Struct {
		return nil, "", false
	}
	field := status.FieldByName("Conditions")
	if !field.IsValid() || field.Type() != conditionsType {
		return nil, "", false
	}
	return field.Interface().([]metav1.Condition), v.Elem().Type().Name(), true
}
