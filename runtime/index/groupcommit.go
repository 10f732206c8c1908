package index

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupCommit records intents on one object together. Every write that
// newly references an object patches that object, so writes that reference
// one popular object would queue on it, each patch a read-modify-write of
// the same object that the API server retries on every conflict, until some
// run out of time and are refused. GroupCommit lets one patch per object be
// in flight: annotations asked for while it is are merged into the next
// patch, and each caller returns when a patch holding its annotations is
// stored (or failed), so a write is still admitted only once its intent is
// on the object.
//
// Patches of one object are applied in the order their callers asked
// (a retraction after the recording it undoes); a caller that stops
// waiting leaves its annotations in the batch, where a retraction queued
// after them removes them again.
type GroupCommit struct {
	Targets
	// Timeout bounds one batched patch: it serves callers with deadlines
	// of their own, so no single caller's context may cancel it.
	Timeout time.Duration

	mu      sync.Mutex
	objects map[objectKey]*batch
	// riders are annotations that wait for the next patch of their object
	// (Piggyback); riderKeys counts their keys.
	riders    map[objectKey]*rider
	riderKeys int
	// now is the clock; tests replace it.
	now func() time.Time
}

// rider is what waits for an object's next patch, since when.
type rider struct {
	set   map[string]*string
	since time.Time
}

// Riders are bounded, in objects and in keys, and forgotten after
// riderLifetime: they wait for an object that may never be written again,
// and a key's length is the object's to choose. Past the bounds Piggyback
// refuses, and its caller patches on its own.
const (
	maxRiders     = 4096
	maxRiderKeys  = 65536
	riderLifetime = time.Minute
)

// NewGroupCommit wraps targets; timeout bounds each patch.
func NewGroupCommit(targets Targets, timeout time.Duration) *GroupCommit {
	return &GroupCommit{Targets: targets, Timeout: timeout, objects: map[objectKey]*batch{}, riders: map[objectKey]*rider{}, now: time.Now}
}

// Piggyback hands set to the next patch of the object that Annotate
// writes, instead of a patch of its own: for changes that may wait, such as
// removing intents whose writes are stored, which on a popular object would
// otherwise queue a patch between two writes' recordings. If no write
// references the object within riderLifetime, set is never written. It
// reports false, writing nothing, when too many riders wait.
func (g *GroupCommit) Piggyback(cluster, namespace string, target schema.GroupVersionResource, name string, set map[string]*string) bool {
	key := objectKey{cluster: cluster, namespace: namespace, target: target, name: name}
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.riders[key]
	if !g.roomFor(ok, len(set)) {
		g.forgetExpired()
		if !g.roomFor(ok, len(set)) {
			return false
		}
	}
	if !ok {
		r = &rider{set: map[string]*string{}, since: g.now()}
		g.riders[key] = r
	}
	for k, v := range set {
		if _, had := r.set[k]; !had {
			g.riderKeys++
		}
		r.set[k] = v
	}
	return true
}

// roomFor reports whether keys more keys fit, on an object that has riders
// waiting already or not, under g.mu.
func (g *GroupCommit) roomFor(waiting bool, keys int) bool {
	return (waiting || len(g.riders) < maxRiders) && g.riderKeys+keys <= maxRiderKeys
}

// forgetExpired drops the riders older than riderLifetime, under g.mu.
func (g *GroupCommit) forgetExpired() {
	for key, r := range g.riders {
		if g.now().Sub(r.since) > riderLifetime {
			g.riderKeys -= len(r.set)
			delete(g.riders, key)
		}
	}
}

// board moves the riders of key into b's set, under g.mu. A key b sets
// itself keeps b's value.
func (g *GroupCommit) board(key objectKey, b *batch) {
	r, ok := g.riders[key]
	if !ok {
		return
	}
	for k, v := range r.set {
		if _, own := b.set[k]; !own {
			b.set[k] = v
		}
	}
	g.riderKeys -= len(r.set)
	delete(g.riders, key)
}

// objectKey names one referenced object as a write addresses it.
type objectKey struct {
	cluster, namespace string
	target             schema.GroupVersionResource
	name               string
}

// batch is the annotations asked for an object while its previous patch
// was in flight, written together by the next one.
type batch struct {
	set  map[string]*string
	done chan struct{}
	// next is the batch gathering while this one is written; nil until
	// a caller asks during the write.
	next *batch
	// state and err are the patch's outcome, set before done is closed.
	state TargetState
	err   error
}

// Annotate implements Targets: it joins the object's open batch, or opens
// one and writes it, and returns the outcome of the patch that wrote set.
func (g *GroupCommit) Annotate(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string, set map[string]*string) (TargetState, error) {
	key := objectKey{cluster: cluster, namespace: namespace, target: target, name: name}
	g.mu.Lock()
	writing, ok := g.objects[key]
	var b *batch
	switch {
	case !ok:
		b = newBatch(set)
		g.board(key, b)
		g.objects[key] = b
		go g.write(key, b)
	case writing.next == nil:
		b = newBatch(set)
		g.board(key, b)
		writing.next = b
	default:
		b = writing.next
		for k, v := range set {
			b.set[k] = v
		}
	}
	g.mu.Unlock()
	select {
	case <-b.done:
		return b.state, b.err
	case <-ctx.Done():
		return TargetState{}, ctx.Err()
	}
}

func newBatch(set map[string]*string) *batch {
	b := &batch{set: make(map[string]*string, len(set)), done: make(chan struct{})}
	for k, v := range set {
		b.set[k] = v
	}
	return b
}

// write writes b, then every batch that gathered meanwhile, one patch at a
// time, and forgets the object when none is left.
func (g *GroupCommit) write(key objectKey, b *batch) {
	for b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), g.Timeout)
		b.state, b.err = g.Targets.Annotate(ctx, key.cluster, key.namespace, key.target, key.name, b.set)
		cancel()
		g.mu.Lock()
		next := b.next
		if next == nil {
			delete(g.objects, key)
		} else {
			g.objects[key] = next
		}
		g.mu.Unlock()
		close(b.done)
		b = next
	}
}
