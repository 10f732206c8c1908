package decision

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
)

// keepIntents refuses an update of a protected object that drops an intent
// that is still fresh, unless the webhook itself makes it (it withdraws,
// retracts and prunes intents) or the intent's write is over and left its
// dependent stored and referencing the object (index.Held: a deletion finds
// it by reading the dependents). An intent stands for a dependent's write
// that may not be stored yet; an update that drops it (`kubectl replace`,
// a tool that writes whole objects) would let a deletion decided after it
// miss that write. The refusal is a conflict: the writer reads the object
// again, with the intent, and retries.
func (v *Validator) keepIntents(ctx context.Context, req *admissionv1.AdmissionRequest, w written) (*admissionv1.AdmissionResponse, string) {
	if req.SubResource != "" || len(req.OldObject.Raw) == 0 {
		return admission.Allow(""), outcomeAllowed
	}
	fresh, _ := index.On(w.old.Annotations, v.now(), v.opts.IntentLifetime)
	var dropped []index.Recorded
	for _, in := range fresh {
		if w.obj.Annotations[in.Key] != w.old.Annotations[in.Key] {
			dropped = append(dropped, in)
		}
	}
	if len(dropped) == 0 {
		return admission.Allow(""), outcomeAllowed
	}
	if v.isSelf(ctx, req.UserInfo.Username, admission.ExtraOf(req)) {
		return admission.Allow(""), outcomeAllowed
	}
	in, err := v.pendingIntent(ctx, req, w, dropped)
	if err != nil {
		return admission.Deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			fmt.Sprintf("cannot update %s/%s: checking the dependents its intents name failed: %v", req.Resource.Resource, w.old.Name, err)), admission.OutcomeError
	}
	if in == nil {
		return admission.Allow(""), outcomeAllowed
	}
	target := req.Resource.Resource + "/" + w.old.Name
	who := in.Name
	if who == "" {
		who = in.GenerateName + "*"
	}
	kind := in.Resource
	if i := strings.Index(kind, "."); i > 0 {
		kind = kind[:i]
	}
	v.log.Info("update refused: it drops an intent", "resource", req.Resource.String(), "namespace", w.old.Namespace, "name", w.old.Name,
		"intent", in.Key, "user", req.UserInfo.Username)
	return admission.Deny(http.StatusConflict, metav1.StatusReasonConflict, fmt.Sprintf(
		"cannot update %s: it would drop the annotation %s, the intent of %s/%s, whose write may not be stored yet; keep the annotation as it is, or retry after %s",
		target, in.Key, kind, who, in.At.Add(v.opts.IntentLifetime).UTC().Format(time.RFC3339))), outcomeDenied
}

// pendingIntent returns the first of the dropped intents that index.Judge
// does not find held: its write may still be on its way (the stored
// dependent does not carry its label, whatever it references), or it is
// stored without the reference. The latter would do no harm gone, but the
// guard keeps it until it expires all the same: one rule, and the intent
// costs nothing once its write is stored. Nil means every dropped intent is
// held.
func (v *Validator) pendingIntent(ctx context.Context, req *admissionv1.AdmissionRequest, w written, dropped []index.Recorded) (*index.Recorded, error) {
	cluster, clusterErr := admission.ClusterOf(req, w.annotations())
	byResource := byDependentResource(v.protections.Protections(schema.GroupVersionResource(req.Resource)))
	ctx, cancel := context.WithTimeout(ctx, v.opts.RequestTimeout)
	defer cancel()
	for i, in := range dropped {
		p, ok := byResource[in.Resource]
		if !ok || in.Name == "" || clusterErr != nil {
			return &dropped[i], nil
		}
		d, err := v.finder.Referencing(ctx, cluster, p, in.Namespace, in.Name, w.old.Name)
		if err != nil {
			return nil, err
		}
		if index.Judge(in, d) != index.Held {
			return &dropped[i], nil
		}
	}
	return nil, nil
}
