package decision

// The skip-protection annotation: who may delete with it, and the Event
// that records each deletion it let through, in the object's own
// workspace.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// skipProtection lets the deletion d through when its object carries the
// skip-protection annotation and its user may use it (maySkip), and has the
// Auditor record it. ignored: the object carries the annotation but the
// user may not use it; the deletion is decided as usual, and a denial says
// why the annotation did not count. The webhook's own deletions (the
// deferred ones it carries out) never skip: the annotation is anyone's who
// may patch the object, and the webhook's DELETE is not theirs. Nor does
// anyone's while the webhook cannot tell who it is.
func (v *Validator) skipProtection(ctx context.Context, d admission.Deletion, log logr.Logger) (allowed *admissionv1.AdmissionResponse, ignored bool) {
	if d.Meta.Annotations[v1alpha1.SkipProtectionAnnotation] != "true" {
		return nil, false
	}
	if !v.notSelf(ctx, d.User, d.Extra) {
		log.Info("skip-protection annotation not applied: the deletion is the webhook's own, or the webhook cannot tell")
		return nil, false
	}
	if !v.maySkip(d.Groups) {
		log.Info("skip-protection annotation ignored: the user is in none of the allowed groups", "groups", d.Groups, "allowed", v.opts.SkipProtectionGroups)
		return nil, true
	}
	skipProtectionUses.WithLabelValues(d.Resource.GroupResource().String()).Inc()
	log.Info("deletion allowed by the skip-protection annotation", "annotation", v1alpha1.SkipProtectionAnnotation, "groups", d.Groups)
	if v.opts.Auditor != nil && !d.DryRun {
		v.opts.Auditor.RecordSkip(d)
	}
	return admission.Allow(fmt.Sprintf("%s carries %s=true", d, v1alpha1.SkipProtectionAnnotation)), false
}

// maySkip reports whether a user in groups may use the skip-protection
// annotation: anyone, unless SkipProtectionGroups names who may.
func (v *Validator) maySkip(groups []string) bool {
	if len(v.opts.SkipProtectionGroups) == 0 {
		return true
	}
	for _, g := range groups {
		if slices.Contains(v.opts.SkipProtectionGroups, g) {
			return true
		}
	}
	return false
}

// Reason of the Event recorded when the skip-protection annotation let an
// object go.
const reasonSkipProtection = "DeletionProtectionSkipped"

// SkipAuditor records a deletion that the skip-protection annotation let
// through. It must not block or fail the admission decision.
type SkipAuditor interface {
	RecordSkip(d admission.Deletion)
}

// EventAuditor records each use of the skip-protection annotation as an
// Event on the deleted object, in its own workspace, where its owners look.
type EventAuditor struct {
	Finder   *FrontProxyFinder
	Log      logr.Logger
	instance string
	// Confirm bounds how long the auditor waits for the deletion to show
	// before writing the Event; zero means a minute.
	Confirm time.Duration
	// Poll is how often it looks; zero means a second.
	Poll time.Duration
}

// NewEventAuditor returns an auditor writing through finder's front-proxy
// connection.
func NewEventAuditor(finder *FrontProxyFinder, log logr.Logger) *EventAuditor {
	return &EventAuditor{Finder: finder, Log: log, instance: process.EventInstance("depctrl-webhook")}
}

// RecordSkip writes the Event in the background, once the deletion shows:
// the object is gone, replaced, or being deleted. The webhook does not
// authenticate its callers, so the review alone proves nothing; an Event
// written on a forged review (or for a deletion another admission plugin
// then refused) would tell the object's owners of a deletion that never
// happened. A failure is logged.
func (a *EventAuditor) RecordSkip(d admission.Deletion) {
	ev := skipEvent(d, a.instance, time.Now())
	cluster, gvr, meta := d.Cluster, d.Resource, d.Meta
	go func() {
		confirm, poll := a.Confirm, a.Poll
		if confirm == 0 {
			confirm = time.Minute
		}
		if poll == 0 {
			poll = time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), confirm+10*time.Second)
		defer cancel()
		log := a.Log.WithValues("cluster", cluster, "resource", gvr.Resource, "namespace", meta.Namespace, "name", meta.Name)
		if !deletionShows(ctx, time.Now().Add(confirm), poll, poll, func(ctx context.Context) (deletionState, error) {
			return a.Finder.deletionState(ctx, cluster, gvr, meta)
		}) {
			log.Info("skip-protection Event not recorded: the object was not deleted (refused by another admission step, or the review did not come from kcp)")
			return
		}
		if err := a.Finder.createEvent(ctx, cluster, ev); err != nil {
			log.Error(err, "recording the skip-protection Event")
		}
	}()
}

// createEvent creates ev in cluster, in the namespace it names.
func (f *FrontProxyFinder) createEvent(ctx context.Context, cluster string, ev *unstructured.Unstructured) error {
	path, err := admission.Path(cluster, process.EventsGVR, ev.GetNamespace(), "")
	if err != nil {
		return err
	}
	body, err := ev.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding the Event: %w", err)
	}
	return path.On(f.raw.Post()).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
}

// deletionState is what a read says of an object a review named.
type deletionState int

const (
	// stillThere: the same object, not being deleted.
	stillThere deletionState = iota
	// deletionShown: gone, replaced by another of its name, or being
	// deleted.
	deletionShown
	// movedOn: the same object, not being deleted, at another revision
	// than the review's. The API server stores a deletion only against the
	// revision it was decided on, so the one the review allowed never
	// will be; it decides (and the webhook audits) a later try anew.
	movedOn
)

// deletionShows polls state until it shows the deletion or deadline
// passes; read errors count as "not yet". Each poll waits twice as long as
// the one before, up to maxPoll (poll itself, for a steady pace).
func deletionShows(ctx context.Context, deadline time.Time, poll, maxPoll time.Duration, state func(context.Context) (deletionState, error)) bool {
	for {
		switch st, err := state(ctx); {
		case err != nil:
		case st == deletionShown:
			return true
		case st == movedOn:
			return false
		}
		if time.Now().Add(poll).After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(poll):
		}
		poll = max(poll, min(2*poll, maxPoll))
	}
}

// deletionState reads the object meta names in cluster.
func (f *FrontProxyFinder) deletionState(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta) (deletionState, error) {
	if meta.Name == "" {
		// Without a name the address is the collection, which says
		// nothing of the object.
		return stillThere, fmt.Errorf("reading %s in %s: the object has no name", gvr.GroupResource(), cluster)
	}
	obj, found, err := f.Meta(ctx, cluster, gvr, meta.Namespace, meta.Name)
	if err != nil {
		return stillThere, err
	}
	return stateOf(obj.ObjectMeta, found, meta), nil
}

// stateOf is what a read of an object found (stored, when found) says of
// the one a review named (reviewed): gone, replaced by another of its
// name, or being deleted shows its deletion; still there at another
// revision than the reviewed one, when that is known, that the deletion
// the review allowed was not stored.
func stateOf(stored metav1.ObjectMeta, found bool, reviewed metav1.ObjectMeta) deletionState {
	switch {
	case !found || stored.UID != reviewed.UID || stored.DeletionTimestamp != nil:
		return deletionShown
	case reviewed.ResourceVersion != "" && stored.ResourceVersion != reviewed.ResourceVersion:
		return movedOn
	}
	return stillThere
}

// skipEvent is the Event for one skip-protection use.
func skipEvent(d admission.Deletion, instance string, now time.Time) *unstructured.Unstructured {
	return deletionEvent(regardingDeleted(d, d.Meta.UID), process.EventWarning, reasonSkipProtection,
		fmt.Sprintf("%s deleted with %s=true by %s (groups: %s): dependency protection was not applied",
			d, v1alpha1.SkipProtectionAnnotation, d.User, strings.Join(d.Groups, ", ")),
		instance).Object(now)
}
