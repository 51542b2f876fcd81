package controller

import (
	"container/heap"

	"k8s.io/client-go/util/workqueue"
)

// Prioritizer is a Reconciler some of whose keys are more urgent than others: a worker takes
// the queued key of highest priority first, and keys of one priority in the order they came.
// A PullRequest asked to merge, say, goes before one that only needs opening, so a wave of new
// pull requests cannot hold every merge behind it.
//
// Priority is called with the queue's lock held, each time a key is queued or queued again: it
// must be quick (a lister read) and must not enqueue anything.
type Prioritizer interface {
	Priority(key string) int
}

// priorityQueue is the storage of a workqueue whose keys come out by priority, then first in,
// first out. The workqueue calls it from one goroutine at a time.
type priorityQueue struct {
	priority func(string) int
	items    []*queued
	index    map[string]*queued
	next     uint64
}

type queued struct {
	key      string
	priority int
	seq      uint64
	at       int
}

var _ workqueue.Queue[string] = (*priorityQueue)(nil)

func newPriorityQueue(priority func(string) int) *priorityQueue {
	return &priorityQueue{priority: priority, index: map[string]*queued{}}
}

// Push adds key. The workqueue never pushes a key it holds already.
func (q *priorityQueue) Push(key string) {
	it := &queued{key: key, priority: q.priority(key), seq: q.next}
	q.next++
	q.index[key] = it
	heap.Push((*byPriority)(q), it)
}

// Touch is a key queued again while it waits: its priority may have changed (a PullRequest
// asked to merge since it was queued), its place among its peers does not.
func (q *priorityQueue) Touch(key string) {
	it, ok := q.index[key]
	if !ok {
		return
	}
	if p := q.priority(key); p != it.priority {
		it.priority = p
		heap.Fix((*byPriority)(q), it.at)
	}
}

func (q *priorityQueue) Len() int { return len(q.items) }

func (q *priorityQueue) Pop() string {
	it := heap.Pop((*byPriority)(q)).(*queued)
	delete(q.index, it.key)
	return it.key
}

// byPriority is the heap order of a priorityQueue's items.
type byPriority priorityQueue

func (h *byPriority) Len() int { return len(h.items) }

func (h *byPriority) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.seq < b.seq
}

func (h *byPriority) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].at, h.items[j].at = i, j
}

func (h *byPriority) Push(x any) {
	it := x.(*queued)
	it.at = len(h.items)
	h.items = append(h.items, it)
}

func (h *byPriority) Pop() any {
	last := len(h.items) - 1
	it := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	return it
}
