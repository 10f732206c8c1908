package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// A stamp is published only on rules read as they are. The controller's
// view of a shard is used only while its watch runs (process.Cached), but a connection that silently stops delivering, without a
// reset, keeps a watch running until the transport gives up on it: for
// that long, a rule changed on that shard is missing from the view, and a
// stamp computed from it is the stamp of rules that no longer stand. The
// webhook withdraws such a stamp when it sees it published, but a settled
// object's deletion skips the webhook for as long as it is. So before a run
// publishes a stamp that is not published already, it reads the rules'
// metadata straight from every shard and publishes only if each rule of
// the view is there at the same version, and no other is.

// ruleVersions maps each rule, by "<cluster>/<name>", to its version: UID,
// generation and whether it is being deleted.
func ruleVersions[T any](objs []T, key func(T) (string, string)) map[string]string {
	out := make(map[string]string, len(objs))
	for _, o := range objs {
		k, v := key(o)
		out[k] = v
	}
	return out
}

func viewedVersion(o process.ShardObject) (string, string) {
	return o.Cluster + "/" + o.Obj.GetName(),
		fmt.Sprintf("%s/%d/%t", o.Obj.GetUID(), o.Obj.GetGeneration(), o.Obj.GetDeletionTimestamp() != nil)
}

func listedVersion(m process.ShardMeta) (string, string) {
	return m.Cluster + "/" + m.Obj.Name,
		fmt.Sprintf("%s/%d/%t", m.Obj.UID, m.Obj.Generation, m.Obj.DeletionTimestamp != nil)
}

// viewDiffers names the rules whose version in view, the rules a run
// planned with, differs from listed, read from the servers; none when they
// agree.
func viewDiffers(view []process.ShardObject, listed []process.ShardMeta) []string {
	v, l := ruleVersions(view, viewedVersion), ruleVersions(listed, listedVersion)
	var differ []string
	for k := range maps.Keys(v) {
		if l[k] != v[k] {
			differ = append(differ, k)
		}
	}
	for k := range maps.Keys(l) {
		if _, ok := v[k]; !ok {
			differ = append(differ, k)
		}
	}
	slices.Sort(differ)
	return differ
}

// confirmView reads the rules' metadata on every shard at urls and returns
// an error naming the rules whose version differs from view, or why they
// could not be read.
func (s *Syncer) confirmView(ctx context.Context, urls []string, view []process.ShardObject) error {
	// A shard that accepts the connection and answers nothing must not
	// hold the run up for longer.
	ctx, cancel := context.WithTimeout(ctx, stampConfirmTimeout)
	defer cancel()
	var listed []process.ShardMeta
	for _, url := range urls {
		metas, err := s.VW.ListShardMetadata(ctx, url, v1alpha1.GroupVersionResource)
		if err != nil {
			return fmt.Errorf("reading the rules to confirm the stamps: %w", err)
		}
		listed = append(listed, metas...)
	}
	if differ := viewDiffers(view, listed); len(differ) > 0 {
		return fmt.Errorf("the rules as read from the servers differ from the view the stamps were computed from: %s", strings.Join(differ, ", "))
	}
	return nil
}

// confirmStamps keeps plan from publishing a stamp that published does not
// hold already unless the view of the rules it was computed from is
// confirmed by a read of every shard at urls; a run follows shortly.
func (s *Syncer) confirmStamps(ctx context.Context, plan *Plan, published Stamps, urls []string, view []process.ShardObject) {
	var fresh []schema.GroupResource
	for gr, stamp := range plan.Stamps {
		if stamp != "" && published[gr] != stamp {
			fresh = append(fresh, gr)
		}
	}
	if len(fresh) == 0 {
		return
	}
	err := s.confirmView(ctx, urls, view)
	if err == nil {
		return
	}
	names := make([]string, len(fresh))
	for i, gr := range fresh {
		delete(plan.Stamps, gr)
		names[i] = gr.String()
	}
	slices.Sort(names)
	s.Log.Info("not publishing stamps this run", "resources", names, "reason", err.Error())
	time.AfterFunc(stampConfirmRetry, s.Trigger)
}

const (
	// stampConfirmRetry is how soon a run follows one that could not
	// confirm the stamps it would have published.
	stampConfirmRetry = 2 * time.Second
	// stampConfirmTimeout bounds the read that confirms them.
	stampConfirmTimeout = 10 * time.Second
)
