package process

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// liveness says whether a watch's view is current. While all is well,
// the last list or watch request succeeded and the watch has not ended
// since, so every change after what the view holds is on its way. Once the
// watch ends (the connection reset, the shard unreachable) or a request to
// start it again fails, the view is stale: it may lack any change made
// since, for as long as the shard cannot be reached. When a list or a watch
// succeeds again (the informer retries on its own), the changes missed
// meanwhile are still on their way, or still to be replaced into the view
// from the list: the view is current again only once it was found equal to
// a list made after that (view.catchUp).
type liveness struct {
	mu sync.Mutex
	// live: the last list or watch request succeeded, and the watch has
	// not ended since.
	live bool
	// caughtUp: the view has not been stale, or was found equal to a list
	// since it was.
	caughtUp bool
	// losses counts the failures that left the view stale.
	losses int
	// lost is why the view is not live, nil while it is.
	lost error
	// notServed: the last list found the resource not served on the shard
	// (notServedYet), so the view is empty as of that list, and the watch
	// that follows fails the same way without the view being any staler.
	notServed bool
	// changed is closed, and replaced, whenever live changes.
	changed chan struct{}
}

func newLiveness() *liveness {
	return &liveness{caughtUp: true, lost: fmt.Errorf("no list has succeeded yet"), changed: make(chan struct{})}
}

// setLive records that the view is live again.
func (l *liveness) setLive() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = nil
	if !l.live {
		l.live = true
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// setLost records that the view is stale, and why.
func (l *liveness) setLost(why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = why
	if l.live {
		l.live = false
		close(l.changed)
		l.changed = make(chan struct{})
	}
	l.caughtUp = false
	l.losses++
}

// listed records the outcome of a list: served says whether the shard
// serves the resource.
func (l *liveness) listed(served bool, err error) {
	if err != nil {
		l.setLost(fmt.Errorf("listing: %w", err))
		return
	}
	l.mu.Lock()
	l.notServed = !served
	l.mu.Unlock()
	l.setLive()
}

// watchStarted records the outcome of a request to start a watch; notServed
// says whether it failed because the shard does not serve the resource.
func (l *liveness) watchStarted(notServed bool, err error) {
	if err == nil {
		l.setLive()
		return
	}
	l.mu.Lock()
	keep := notServed && l.notServed
	l.mu.Unlock()
	if !keep {
		l.setLost(fmt.Errorf("watching: %w", err))
	}
}

// ended records that a watch ended.
func (l *liveness) ended() {
	l.setLost(fmt.Errorf("the watch ended and has not been started again"))
}

// wait waits until the view is live or ctx ends, and returns why it is not
// live then, nil when it is. It also says whether the view has caught up,
// and if not, the loss to pass to caughtUpAfter.
func (l *liveness) wait(ctx context.Context) (caughtUp bool, loss int, err error) {
	for {
		l.mu.Lock()
		live, caughtUp, loss, lost, changed := l.live, l.caughtUp, l.losses, l.lost, l.changed
		l.mu.Unlock()
		if live {
			return caughtUp, loss, nil
		}
		select {
		case <-ctx.Done():
			return false, loss, lost
		case <-changed:
		}
	}
}

// caughtUpAfter records that the view was found equal to a list made while
// it was live, after loss, the last time it became stale: unless it became
// stale again since, it is current.
func (l *liveness) caughtUpAfter(loss int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live && l.losses == loss {
		l.caughtUp = true
	}
}

// endingWatch passes on a watch's events and calls ended once the watch
// has ended, whoever ended it.
type endingWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newEndingWatch(inner watch.Interface, ended func()) *endingWatch {
	w := &endingWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		defer ended()
		for {
			select {
			case ev, ok := <-inner.ResultChan():
				if !ok {
					return
				}
				select {
				case w.out <- ev:
				case <-w.stop:
					return
				}
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *endingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *endingWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.inner.Stop()
}

// liveListWatch lists and watches gvr through lw, and records in live
// whether the view they feed is current. A resource the export only claims
// that the shard does not serve yet lists as none: the view is empty, not
// missing. The watch that follows fails the same way, and the informer
// lists again (backing off up to 30 s) until it is served.
func liveListWatch(gvr schema.GroupVersionResource, lw cache.ListerWatcher, live *liveness) cache.ListerWatcher {
	inner := cache.ToListerWatcherWithContext(lw)
	return classicListWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := inner.ListWithContext(ctx, opts)
			if notServedYet(gvr, err) {
				live.listed(false, nil)
				return &unstructured.UnstructuredList{}, nil
			}
			live.listed(true, err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			wi, err := inner.WatchWithContext(ctx, opts)
			live.watchStarted(notServedYet(gvr, err), err)
			if err != nil {
				return nil, err
			}
			return newEndingWatch(wi, live.ended), nil
		},
	}}
}

// classicListWatch lists and then watches: it opts out of the informer's
// watch-list mode (the initial list streamed as watch events), so that a
// view is current from the moment the list it was replaced with succeeded.
type classicListWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells client-go's reflector to list.
func (classicListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// health returns how many times the view was lost so far, and whether it
// is live.
func (l *liveness) health() (losses int, live bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.losses, l.live
}
