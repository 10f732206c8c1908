package decision

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// Candidates are told of the places where protected objects are created or
// deleted, so that the objects there can be settled (settle.Settler).
type Candidates interface {
	Created(cluster string, gvr schema.GroupVersionResource, namespace string)
	Deleted(cluster string, gvr schema.GroupVersionResource, namespace string)
}

// guardSettled refuses a create or update that sets the settled label or
// changes its value, unless the webhook itself makes it: a settled object's
// deletion never reaches the webhook, so a label anyone else could write
// would switch protection off. Removing the label is always allowed; it
// only sends the object's deletion to the webhook again. The match
// condition of the guard entry selects the same writes, and this check
// stands on its own should a configuration lack it.
func (v *Validator) guardSettled(ctx context.Context, req *admissionv1.AdmissionRequest, w written) (*admissionv1.AdmissionResponse, string, bool) {
	value, set := w.obj.Labels[settle.SettledLabel]
	if was, had := w.old.Labels[settle.SettledLabel]; !set || (had && was == value) {
		return nil, "", false
	}
	return v.refuseUnlessSelf(ctx, req, w, "it sets the settled label", fmt.Sprintf(
		"only the dependency webhook may set the label %s, which exempts the object's deletion from protection; remove the label from the object",
		settle.SettledLabel))
}

// refuseUnlessSelf refuses the write req, w, with 403 and why (the reason
// after "cannot <verb> <resource>/<name>: "), unless the webhook itself
// makes it; logged as refused because of what.
func (v *Validator) refuseUnlessSelf(ctx context.Context, req *admissionv1.AdmissionRequest, w written, what, why string) (*admissionv1.AdmissionResponse, string, bool) {
	if v.isSelf(ctx, req.UserInfo.Username, admission.ExtraOf(req)) {
		return nil, "", false
	}
	name := w.obj.Name
	if name == "" {
		name = w.obj.GenerateName + "*"
	}
	v.log.Info("write refused: "+what, "resource", req.Resource.String(), "namespace", req.Namespace, "name", name, "user", req.UserInfo.Username)
	return admission.Deny(http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf("cannot %s %s/%s: %s",
		strings.ToLower(string(req.Operation)), req.Resource.Resource, name, why)), outcomeDenied, true
}

// isSelf reports whether user, with extra, is the webhook's own; false when
// that cannot be told, so that only a known self is trusted. The name alone
// does not say it: kcp lets a workspace authenticate users of its own
// (WorkspaceAuthenticationConfiguration), whose names it does not reserve,
// and marks them, and service accounts, with extras under
// authentication.kcp.io/ (the workspace they are scoped to); those must be
// the webhook's own too, so that a user of the webhook's name minted in one
// workspace is not the webhook.
func (v *Validator) isSelf(ctx context.Context, user string, extra map[string][]string) bool {
	is, known := v.whetherSelf(ctx, user, extra)
	return is && known
}

// notSelf reports whether user, with extra, is known not to be the
// webhook's own; false when that cannot be told, so that what must never
// apply to the webhook (skip-protection on the deletions it carries out)
// fails closed.
func (v *Validator) notSelf(ctx context.Context, user string, extra map[string][]string) bool {
	is, known := v.whetherSelf(ctx, user, extra)
	return !is && known
}

// whetherSelf tells whether user, with extra, is the webhook's own, and
// whether that is known (the webhook's identity could be read). With no
// identity configured (Self nil), nobody is the webhook.
func (v *Validator) whetherSelf(ctx context.Context, user string, extra map[string][]string) (is, known bool) {
	if v.opts.Self == nil {
		return false, true
	}
	self, err := v.opts.Self(ctx)
	if err != nil {
		v.log.Error(err, "cannot tell the webhook's own writes from others'")
		return false, false
	}
	if user != self.Username {
		return false, true
	}
	return maps.EqualFunc(kcpAuthentication(extra), kcpAuthentication(self.Extra), slices.Equal), true
}

// kcpAuthentication is the part of a user's extra that kcp's
// authentication sets (keys under authentication.kcp.io/).
func kcpAuthentication[V ~[]string](extra map[string]V) map[string][]string {
	out := map[string][]string{}
	for k, v := range extra {
		if strings.HasPrefix(k, kcpAuthenticationPrefix) {
			out[k] = []string(v)
		}
	}
	return out
}

const kcpAuthenticationPrefix = "authentication.kcp.io/"
