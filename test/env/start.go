package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const defaultReadyTimeout = 3 * time.Minute

// Options tune how an environment is started.
type Options struct {
	// Dir is where the environment keeps its files; a temporary directory
	// when empty. A directory that Start created is removed by Stop.
	Dir string
	// KeepDir leaves the directory in place after Stop, for inspection.
	KeepDir bool
	// ReadyTimeout bounds the wait for the environment to answer.
	ReadyTimeout time.Duration
}

// prepare fills in the defaults and makes o.Dir absolute and present; the
// cleanup it returns removes the directory, if prepare created it and
// KeepDir is off.
func (o *Options) prepare(prefix string) (cleanup func(), err error) {
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = defaultReadyTimeout
	}
	created := false
	if o.Dir == "" {
		o.Dir, err = os.MkdirTemp("", prefix)
		if err != nil {
			return nil, err
		}
		created = true
	} else if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return nil, err
	}
	keep := o.KeepDir
	dir := o.Dir
	return func() {
		if created && !keep {
			_ = os.RemoveAll(dir)
		}
	}, nil
}

// Start starts an environment of the given topology.
func Start(ctx context.Context, topology Topology, opts Options) (*Env, error) {
	switch topology {
	case SingleShard:
		return StartSingleShard(ctx, opts)
	case TwoShards:
		return StartTwoShards(ctx, opts)
	default:
		return nil, fmt.Errorf("unknown topology %q (want %q or %q)", topology, SingleShard, TwoShards)
	}
}

// undoOnError runs undo when *err is set as the deferring start returns: a
// start that fails leaves nothing behind of what it did.
func undoOnError(err *error, undo func()) {
	if *err != nil {
		undo()
	}
}

// stopOnError stops e when *err is set as the deferring start returns, and
// adds the tail of e's logs to the error: a start that fails leaves no
// process running, and says what kcp said.
func (e *Env) stopOnError(err *error) {
	if *err != nil {
		*err = fmt.Errorf("%w\n%s", *err, e.TailLogs(30))
		_ = e.stop()
	}
}

// serve finishes a start once kcp has written its admin kubeconfig and
// e.Shards is known: it writes each shard's admin kubeconfig, waits (up to
// timeout, and only while p runs) until the front-proxy and every shard
// answer, and writes the descriptor Attach reads.
func (e *Env) serve(ctx context.Context, timeout time.Duration, p *Process) error {
	for i := range e.Shards {
		if err := e.writeShardAdmin(i); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, timeout, p, func() bool { return e.ready(ctx) == nil }); err != nil {
		return fmt.Errorf("waiting for the front-proxy and every shard to answer: %w (last: %v)", err, e.ready(ctx))
	}
	return e.WriteDescriptor()
}
