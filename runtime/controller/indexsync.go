package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// writtenGenerationAnnotation: see v1alpha1.WrittenGenerationAnnotation.
const writtenGenerationAnnotation = v1alpha1.WrittenGenerationAnnotation

// indexSync is what one run did to the reference index configurations.
type indexSync struct {
	// UIDs of the configuration in each cluster where it is in place: the
	// epoch of the rules there (status.indexEpoch).
	UIDs map[string]string
	// Failed holds the install failure of each cluster, which the rules
	// there report.
	Failed map[string]error
}

// settleIndex completes a rule's index outcome with what the run did: the
// epoch once the configuration is in place, the failure otherwise. A rule
// without an epoch has its dependents read in full.
func settleIndex(rp *RulePlan, done indexSync) {
	if !rp.Indexed.OK {
		return
	}
	if err := done.Failed[rp.IndexTarget]; err != nil {
		rp.Indexed = Outcome{Reason: "InstallFailed", Message: fmt.Sprintf(
			"installing the reference index webhook configuration in this workspace: %v; deletes are still checked, but by reading every dependent", err)}
		return
	}
	rp.IndexEpoch = done.UIDs[rp.IndexTarget]
}

// syncIndexes makes the reference index configurations match the plan:
// installed or repaired where rules want them, and ours removed where none
// does. The error joins every failure, so that the run is retried.
func (s *Syncer) syncIndexes(ctx context.Context, plan *Plan, bindings map[string]Binding, settings WebhookSettings, existing []process.ShardObject, listed bool) (indexSync, error) {
	var current map[string]*unstructured.Unstructured
	if listed {
		current = byCluster(existing, settings.ConfigurationName)
	}
	jobs := configJobs(plan.Indexes, existing, settings.ConfigurationName)
	uids := make([]string, len(jobs))
	errs := make([]error, len(jobs))
	concurrently(len(jobs), func(i int) {
		j := jobs[i]
		if j.stale != nil {
			errs[i] = s.deleteConfiguration(ctx, process.MutatingWebhookConfigurationsGVR, *j.stale, "removed reference index configuration: no rule here wants it any more")
			return
		}
		uids[i], errs[i] = s.ensureIndexIn(ctx, bindings[j.cluster].URL, j.cluster, listed, current[j.cluster], DesiredIndexConfiguration(settings.Scoped(admission.Of(j.cluster)), j.gvrs))
		if errs[i] != nil {
			s.Log.Error(errs[i], "installing reference index configuration", "cluster", j.cluster)
		}
	})
	out := indexSync{UIDs: map[string]string{}, Failed: map[string]error{}}
	var failed []error
	for i, j := range jobs {
		switch {
		case errs[i] == nil && j.stale == nil:
			out.UIDs[j.cluster] = uids[i]
		case errs[i] == nil:
		case j.stale != nil:
			failed = append(failed, errs[i])
		default:
			out.Failed[j.cluster] = errs[i]
			failed = append(failed, fmt.Errorf("installing reference index configuration in %s: %w", j.cluster, errs[i]))
		}
	}
	return out, errors.Join(failed...)
}

// ensureIndexIn ensures the configuration in cluster, reached through the
// virtual workspace at url. When listed, current is the configuration as
// this run listed it (nil: none); otherwise it is read first.
func (s *Syncer) ensureIndexIn(ctx context.Context, url, cluster string, listed bool, current *unstructured.Unstructured, desired *admissionregistrationv1.MutatingWebhookConfiguration) (string, error) {
	c, err := s.VW.Client(url, cluster)
	if err != nil {
		return "", err
	}
	return s.ensureListedIndex(ctx, c.Resource(process.MutatingWebhookConfigurationsGVR), cluster, listed, current, desired)
}

// ensureListedIndex is ensureIndexIn with res, the cluster's index
// configurations.
func (s *Syncer) ensureListedIndex(ctx context.Context, res dynamic.ResourceInterface, cluster string, listed bool, current *unstructured.Unstructured, desired *admissionregistrationv1.MutatingWebhookConfiguration) (string, error) {
	var err error
	if !listed {
		if current, err = readConfiguration(ctx, res, desired.Name); err != nil {
			return "", err
		}
	}
	return writeListed(ctx, res, desired.Name, current, func(current *unstructured.Unstructured) (string, error) {
		return s.ensureIndexConfiguration(ctx, res, cluster, current, desired)
	})
}

// writeListed runs write with the configuration as this run listed it
// (nil: none) and, when it was changed or created since (a conflict, or it
// exists already), once more with it read again.
func writeListed[T any](ctx context.Context, res dynamic.ResourceInterface, name string, current *unstructured.Unstructured, write func(*unstructured.Unstructured) (T, error)) (T, error) {
	out, err := write(current)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		if current, err = readConfiguration(ctx, res, name); err != nil {
			var none T
			return none, err
		}
		out, err = write(current)
	}
	return out, err
}

// readConfiguration reads the configuration called name, nil when there is
// none.
func readConfiguration(ctx context.Context, res dynamic.ResourceInterface, name string) (*unstructured.Unstructured, error) {
	current, err := res.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	return current, nil
}

// ensureIndexConfiguration makes the cluster's reference index
// configuration match desired and returns its UID. A configuration that
// someone else changed is recreated rather than repaired: the new UID is a
// new epoch, so index labels written while writes could skip the webhook
// are never trusted again. The controller's own changes keep the UID: they
// never leave a covered type uncovered.
func (s *Syncer) ensureIndexConfiguration(ctx context.Context, res dynamic.ResourceInterface, cluster string, current *unstructured.Unstructured, desired *admissionregistrationv1.MutatingWebhookConfiguration) (string, error) {
	if current == nil {
		return s.createIndexConfiguration(ctx, res, cluster, desired)
	}
	existing := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, existing); err != nil {
		return "", fmt.Errorf("decoding: %w", err)
	}
	if ChangedByOthers(existing) {
		s.Log.Info("reference index configuration was changed by someone else; recreating it so that a new epoch starts", "cluster", cluster,
			"generation", existing.Generation, "written", existing.Annotations[writtenGenerationAnnotation])
		err := res.Delete(ctx, existing.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID, ResourceVersion: &existing.ResourceVersion}})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("deleting to recreate: %w", err)
		}
		return s.createIndexConfiguration(ctx, res, cluster, desired)
	}
	if !IndexConfigurationDrifted(existing, desired) {
		return string(existing.UID), nil
	}
	generation := existing.Generation
	if !equality.Semantic.DeepEqual(existing.Webhooks, desired.Webhooks) {
		generation++ // what the server makes of a change to the webhooks
	}
	ApplyOwnedIndexFields(existing, desired)
	updated, err := writeIndexConfiguration(ctx, res, existing, generation, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return res.Update(ctx, u, metav1.UpdateOptions{FieldManager: "depctrl-controller"})
	})
	if err != nil {
		return "", fmt.Errorf("updating: %w", err)
	}
	s.Log.Info("updated reference index configuration", "cluster", cluster, "resources", len(desired.Webhooks[0].Rules))
	return string(updated.GetUID()), nil
}

func (s *Syncer) createIndexConfiguration(ctx context.Context, res dynamic.ResourceInterface, cluster string, desired *admissionregistrationv1.MutatingWebhookConfiguration) (string, error) {
	// The server starts every configuration at generation 1.
	created, err := writeIndexConfiguration(ctx, res, desired.DeepCopy(), 1, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return res.Create(ctx, u, metav1.CreateOptions{FieldManager: "depctrl-controller"})
	})
	if err != nil {
		return "", fmt.Errorf("creating: %w", err)
	}
	s.Log.Info("installed reference index configuration", "cluster", cluster, "resources", len(desired.Webhooks[0].Rules), "uid", created.GetUID())
	return string(created.GetUID()), nil
}

// writeIndexConfiguration stores c with write (a create or an update),
// recording generation as the one the controller wrote, and returns what
// the server stored once that record is confirmed: every write of the
// controller's own leaves ChangedByOthers false.
func writeIndexConfiguration(ctx context.Context, res dynamic.ResourceInterface, c *admissionregistrationv1.MutatingWebhookConfiguration, generation int64,
	write func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) (*unstructured.Unstructured, error) {
	setWrittenGeneration(c, generation)
	u, err := toUnstructured(c, "MutatingWebhookConfiguration")
	if err != nil {
		return nil, err
	}
	written, err := write(u)
	if err != nil {
		return nil, err
	}
	if err := confirmWrittenGeneration(ctx, res, written, generation); err != nil {
		return nil, err
	}
	return written, nil
}

// ChangedByOthers reports whether the webhooks of c were changed by anyone
// but this controller since it last wrote them, or it cannot tell.
func ChangedByOthers(c *admissionregistrationv1.MutatingWebhookConfiguration) bool {
	return c.Annotations[writtenGenerationAnnotation] != strconv.FormatInt(c.Generation, 10)
}

func setWrittenGeneration(c *admissionregistrationv1.MutatingWebhookConfiguration, generation int64) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[writtenGenerationAnnotation] = strconv.FormatInt(generation, 10)
}

// confirmWrittenGeneration corrects the annotation when the server gave
// written another generation than expected. Annotations do not count as a
// change to the webhooks, so this write keeps the generation.
func confirmWrittenGeneration(ctx context.Context, res dynamic.ResourceInterface, written *unstructured.Unstructured, expected int64) error {
	if written.GetGeneration() == expected {
		return nil
	}
	ann := written.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[writtenGenerationAnnotation] = strconv.FormatInt(written.GetGeneration(), 10)
	written.SetAnnotations(ann)
	if _, err := res.Update(ctx, written, metav1.UpdateOptions{FieldManager: "depctrl-controller"}); err != nil {
		return fmt.Errorf("recording the written generation: %w", err)
	}
	return nil
}

// liveIndexEpochs maps each workspace to the UID of its reference index
// configuration among objs, where that is intact as the controller wrote it
// (v1alpha1.IntactIndexEpoch); one that cannot be decoded is not.
func liveIndexEpochs(objs []process.ShardObject) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		if o.Obj.GetName() != v1alpha1.WebhookConfigurationName {
			continue
		}
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, cfg); err != nil {
			continue
		}
		if epoch := v1alpha1.IntactIndexEpoch(cfg); epoch != "" {
			out[o.Cluster] = epoch
		}
	}
	return out
}
