package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
)

var (
	_ identifiedResource                  = &runtimeResource{}
	_ resource.ResourceWithModifyPlan     = &runtimeResource{}
	_ resource.ResourceWithValidateConfig = &runtimeResource{}
)

const (
	defaultRuntimeTimeout = 10 * time.Minute
	// privateKey is where the resource keeps what must not show in plans:
	// the generated keys and the objects exactly as applied.
	privateKey = "runtime"
)

// NewRuntimeResource returns the depctrl_runtime resource.
func NewRuntimeResource() resource.Resource { return &runtimeResource{resourceType{name: "runtime"}} }

type runtimeResource struct{ resourceType }

type runtimeModel struct {
	runtimeInputs
	ID                  types.String `tfsdk:"id"`
	WaitForRollout      types.Bool   `tfsdk:"wait_for_rollout"`
	WebhookURL          types.String `tfsdk:"webhook_url"`
	CABundle            types.String `tfsdk:"ca_bundle"`
	CertificateNotAfter types.String `tfsdk:"certificate_not_after"`
	Objects             types.Map    `tfsdk:"objects"`
	timed
}

// ModifyPlan fills the image tag with the provider's version and works out
// the objects, the CA bundle and the certificate expiry, so that a plan
// shows exactly which objects change and when a certificate is renewed.
func (r *runtimeResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	plan, _ := getModel[runtimeModel](ctx, req.Plan, &resp.Diagnostics)
	config, ok := getModel[runtimeModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	if config.ImageTag.IsNull() {
		plan.ImageTag = types.StringValue(r.conn.versionTag())
		if !isRelease(r.conn.versionTag()) {
			resp.Diagnostics.AddAttributeWarning(path.Root("image_tag"), "No published image for a development build",
				fmt.Sprintf("This provider is a development build (version %q), so the default image tag %q names no published runtime image. "+
					"Set image and image_tag to the image you built (make image) and pushed.", r.conn.versionTag(), r.conn.versionTag()))
		}
	}
	// A missing or broken kubernetes block fails the plan, not the apply.
	if r.conn != nil && r.conn.kubeErr != nil && !errors.Is(r.conn.kubeErr, errConfigUnknown) {
		resp.Diagnostics.Append(explainKube(r.conn, "configuring the Kubernetes connection for depctrl_runtime", r.conn.kubeErr))
		return
	}
	var state *runtimeModel
	if !req.State.Raw.IsNull() {
		state = &runtimeModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	defer func() { resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...) }()
	inputs := plan.withWriteOnly(&config.runtimeInputs)
	if !inputs.known() {
		return
	}
	cfg, diags := inputs.deployConfig(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.WebhookURL = types.StringValue(cfg.EffectiveWebhookURL())
	plan.ID = types.StringValue(cfg.Namespace + "/" + cfg.Name)

	unknown := func() {
		plan.Objects = types.MapUnknown(types.StringType)
	}
	if cfg.TLS.SecretName != "" {
		if state == nil || state.Webhook == nil || state.Webhook.TLSSecretName.ValueString() != cfg.TLS.SecretName || state.CABundle.ValueString() == "" {
			plan.CABundle, plan.CertificateNotAfter = types.StringUnknown(), types.StringUnknown()
			unknown()
			return
		}
		plan.CABundle, plan.CertificateNotAfter = state.CABundle, state.CertificateNotAfter
		cfg.TLS.CACert = []byte(state.CABundle.ValueString())
	} else {
		validity, renewBefore, err := plan.Webhook.durations()
		if err != nil {
			resp.Diagnostics.AddError("Invalid certificate settings", err.Error())
			return
		}
		var prior *tlsMaterial
		if state != nil {
			if prior, err = r.readTLS(ctx, cfg); err != nil {
				resp.Diagnostics.Append(explainKube(r.conn, "reading the webhook certificate", err))
				return
			}
		}
		ren := planRenewal(prior, plan.servingHosts(ctx, cfg), validity, renewBefore, time.Now())
		if ren.ca {
			plan.CABundle = types.StringUnknown()
		} else {
			plan.CABundle = types.StringValue(prior.CABundle)
		}
		if ren.any() {
			if state != nil {
				tflog.Info(ctx, "planning a new webhook serving certificate", map[string]interface{}{"new_ca": ren.ca})
			}
			plan.CertificateNotAfter = types.StringUnknown()
			unknown()
			return
		}
		if state != nil {
			plan.CertificateNotAfter = state.CertificateNotAfter
		}
		cfg = withTLS(cfg, prior)
	}
	objs, err := deploy.Render(cfg)
	if err != nil {
		resp.Diagnostics.Append(renderError(err))
		return
	}
	plan.Objects = fingerprints(objs)
}

// releaseVersion matches the versions releases carry, whose runtime image
// is published under the same tag; devVersion the development packages
// make release builds from an untagged checkout (0.0.0-dev-<commit>), which
// have no published image.
var (
	releaseVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	devVersion     = regexp.MustCompile(`-dev([.-]|$)`)
)

// isRelease reports whether v is a release version.
func isRelease(v string) bool { return releaseVersion.MatchString(v) && !devVersion.MatchString(v) }

// userAgent names this provider and its version to the servers it calls.
func (c *Connection) userAgent() string { return userAgent + "/" + c.versionTag() }

// versionTag is the image tag that matches this provider binary.
func (c *Connection) versionTag() string {
	if c == nil || c.version == "" {
		return "dev"
	}
	return c.version
}

func fingerprints(objs []*unstructured.Unstructured) types.Map {
	m := make(map[string]attr.Value, len(objs))
	for _, o := range objs {
		m[objectKey(o)] = types.StringValue(fingerprint(o))
	}
	return types.MapValueMust(types.StringType, m)
}

// renderError points a renderer complaint at the attribute it is about.
func renderError(err error) diag.Diagnostic {
	var fe *deploy.FieldError
	if errors.As(err, &fe) {
		return diag.NewAttributeErrorDiagnostic(attributePath(fe.Field), "Invalid runtime configuration", fe.Error())
	}
	return diag.NewErrorDiagnostic("Invalid runtime configuration", err.Error())
}

func (r *runtimeResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	config, _ := getModel[runtimeModel](ctx, req.Config, &resp.Diagnostics)
	plan, timeout, ok := getTimed[runtimeModel](ctx, req.Plan, timeouts.Value.Create, defaultRuntimeTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	r.apply(ctx, &plan, &config.runtimeInputs, &privateState{}, timeout, &resp.State, resp.Private, &resp.Diagnostics)
	if !resp.State.Raw.IsNull() {
		setIdentity(ctx, resp.Identity, runtimeIdentityOf(plan.Namespace, plan.Name), &resp.Diagnostics)
	}
}

func (r *runtimeResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	config, _ := getModel[runtimeModel](ctx, req.Config, &resp.Diagnostics)
	plan, timeout, _ := getTimed[runtimeModel](ctx, req.Plan, timeouts.Value.Update, defaultRuntimeTimeout, &resp.Diagnostics)
	priv, diags := loadPrivate(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, &config.runtimeInputs, priv, timeout, &resp.State, resp.Private, &resp.Diagnostics)
	setIdentity(ctx, resp.Identity, runtimeIdentityOf(plan.Namespace, plan.Name), &resp.Diagnostics)
}

type stateSetter interface {
	Set(ctx context.Context, val interface{}) diag.Diagnostics
}

// apply renders (with the write-only values of config), applies and prunes
// the objects, records them, and waits for the rollout. The state is recorded before waiting, so a rollout that
// times out leaves a resource Terraform knows about.
func (r *runtimeResource) apply(ctx context.Context, plan *runtimeModel, config *runtimeInputs, prior *privateState, timeout time.Duration, state stateSetter, private privateSetter, diags *diag.Diagnostics) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	kube, dyn, ok := r.conn.kubeClients(diags)
	if !ok {
		return
	}
	inputs := plan.withWriteOnly(config)
	cfg, d := inputs.deployConfig(ctx)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	next := &privateState{}
	if cfg.TLS.SecretName != "" {
		ca, notAfter, err := readTLSSecret(ctx, kube, cfg.Namespace, cfg.TLS.SecretName)
		if err != nil {
			diags.AddAttributeError(path.Root("webhook").AtName("tls_secret_name"), "Unusable TLS Secret", err.Error())
			return
		}
		cfg.TLS.CACert = ca
		plan.CABundle = types.StringValue(string(ca))
		plan.CertificateNotAfter = types.StringValue(notAfter.Format(time.RFC3339))
	} else {
		validity, _, err := plan.Webhook.durations()
		if err != nil {
			diags.AddError("Invalid certificate settings", err.Error())
			return
		}
		priorTLS, err := r.readTLS(ctx, cfg)
		if err != nil {
			diags.Append(explainKube(r.conn, "reading the webhook certificate", err))
			return
		}
		// The plan decided: unknown values are what is to be renewed.
		ren := renewal{serving: plan.CertificateNotAfter.IsUnknown(), ca: plan.CABundle.IsUnknown()}
		if priorTLS == nil {
			ren = renewal{serving: true, ca: true}
		}
		tlsm, err := ren.issue(priorTLS, cfg.WebhookName(), plan.servingHosts(ctx, cfg), validity, time.Now())
		if err != nil {
			diags.AddError("Cannot issue the webhook certificate", err.Error())
			return
		}
		cfg = withTLS(cfg, tlsm)
		plan.CABundle = types.StringValue(tlsm.CABundle)
		notAfter, err := certs.NotAfter([]byte(tlsm.Cert))
		if err != nil {
			diags.AddError("Cannot read the webhook certificate", err.Error())
			return
		}
		plan.CertificateNotAfter = types.StringValue(notAfter.UTC().Format(time.RFC3339))
	}
	objs, err := deploy.Render(cfg)
	if err != nil {
		diags.Append(renderError(err))
		return
	}
	tflog.Info(ctx, "applying the runtime", map[string]interface{}{"namespace": cfg.Namespace, "objects": len(objs), "image": cfg.ImageRef()})
	// The webhook rolls out before the controller: a newer controller
	// writes configurations whose URLs only a webhook of its own version
	// may serve, and kcp refuses what a webhook it calls cannot answer.
	rest, controller := splitOff(objs, "Deployment", cfg.ControllerName())
	if err := applyKube(ctx, dyn, rest); err != nil {
		diags.Append(explainKube(r.conn, "applying the runtime", err))
		return
	}
	// Objects the configuration no longer renders (a generated TLS Secret
	// after switching to tls_secret_name) are removed.
	keep := map[string]bool{}
	for _, o := range objs {
		keep[objectKey(o)] = true
	}
	var stale []*unstructured.Unstructured
	for _, o := range prior.applied() {
		if !keep[objectKey(o)] {
			stale = append(stale, o)
		}
	}
	if err := deleteKube(ctx, dyn, timeout, stale); err != nil {
		diags.Append(explainKube(r.conn, "removing objects the runtime no longer needs", err))
		return
	}
	for _, o := range objs {
		next.Applied = append(next.Applied, redact(o).Object)
	}
	plan.ID = types.StringValue(cfg.Namespace + "/" + cfg.Name)
	plan.WebhookURL = types.StringValue(cfg.EffectiveWebhookURL())
	plan.Objects = fingerprints(objs)
	diags.Append(state.Set(ctx, plan)...)
	diags.Append(savePrivate(ctx, private, next)...)
	if diags.HasError() {
		return
	}
	wait := plan.WaitForRollout.ValueBool()
	notRolledOut := func(name string, err error) {
		diags.AddError("Runtime not rolled out", err.Error()+
			". The objects are applied; set wait_for_rollout = false to not wait, or check the pods with kubectl -n "+cfg.Namespace+" describe deployment "+name)
	}
	if wait {
		if err := waitForRollout(ctx, kube, cfg.Namespace, cfg.WebhookName(), timeout); err != nil {
			notRolledOut(cfg.WebhookName(), err)
			return
		}
	}
	if err := applyKube(ctx, dyn, controller); err != nil {
		diags.Append(explainKube(r.conn, "applying the runtime's controller", err))
		return
	}
	if wait {
		if err := waitForRollout(ctx, kube, cfg.Namespace, cfg.ControllerName(), timeout); err != nil {
			notRolledOut(cfg.ControllerName(), err)
		}
	}
}

// splitOff separates the object of kind called name from objs.
func splitOff(objs []*unstructured.Unstructured, kind, name string) (rest, named []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			named = append(named, o)
		} else {
			rest = append(rest, o)
		}
	}
	return rest, named
}

// readTLSSecret reads an existing TLS Secret: its CA for kcp and its
// certificate's expiry.
func readTLSSecret(ctx context.Context, kube kubernetes.Interface, namespace, name string) ([]byte, time.Time, error) {
	s, err := kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	for _, k := range []string{deploy.TLSCertKey, deploy.TLSKeyKey, deploy.CAKey} {
		if len(s.Data[k]) == 0 {
			return nil, time.Time{}, fmt.Errorf("the Secret %s/%s has no %s; it needs %s, %s and %s", namespace, name, k, deploy.TLSCertKey, deploy.TLSKeyKey, deploy.CAKey)
		}
	}
	notAfter, err := certs.NotAfter(s.Data[deploy.TLSCertKey])
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("the Secret %s/%s: %s: %w", namespace, name, deploy.TLSCertKey, err)
	}
	return s.Data[deploy.CAKey], notAfter, nil
}

// waitForRollout waits as `kubectl rollout status` does: the Deployment
// controller has seen the latest spec, and every replica is updated and
// available.
func waitForRollout(ctx context.Context, kube kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	return waitUntil(ctx, timeout, fmt.Sprintf("Deployment %s/%s to roll out", namespace, name), func(ctx context.Context) (bool, string, error) {
		d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		state := fmt.Sprintf("%d/%d updated, %d/%d available (generation %d observed %d)", st.UpdatedReplicas, want, st.AvailableReplicas, want, d.Generation, st.ObservedGeneration)
		for _, c := range st.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
				return false, state, permanent(fmt.Errorf("deployment %s/%s exceeded its progress deadline: %s", namespace, name, c.Message))
			}
			if c.Status != "True" && c.Message != "" {
				state += "; " + string(c.Type) + ": " + c.Message
			}
		}
		done := st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want
		return done, state, nil
	})
}

func (r *runtimeResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, _ := getModel[runtimeModel](ctx, req.State, &resp.Diagnostics)
	priv, diags := loadPrivate(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	kube, dyn, ok := r.conn.kubeClients(&resp.Diagnostics)
	if !ok {
		return
	}
	if len(priv.Applied) == 0 {
		// Imported: learn the configuration from the cluster.
		found, err := r.importRuntime(ctx, kube, &state, priv)
		if err != nil {
			resp.Diagnostics.Append(explainKube(r.conn, "importing the runtime", err))
			return
		}
		if !found {
			resp.Diagnostics.AddError("Runtime not found", fmt.Sprintf("no depctrl runtime %q in namespace %q: there is no Deployment %s-controller", state.Name.ValueString(), state.Namespace.ValueString(), state.Name.ValueString()))
			return
		}
	}
	state.fillAddedAttributes()
	objs := priv.applied()
	live, missing, err := liveState(ctx, dyn, objs)
	if err != nil {
		resp.Diagnostics.Append(explainKube(r.conn, "reading the runtime", err))
		return
	}
	if missing == len(objs) {
		tflog.Info(ctx, "the runtime is gone from the cluster; removing it from state", map[string]interface{}{"id": state.ID.ValueString()})
		removeFromState(ctx, resp, runtimeIdentityOf(state.Namespace, state.Name))
		return
	}
	objects := make(map[string]attr.Value, len(live))
	for _, k := range slices.Sorted(maps.Keys(live)) {
		objects[k] = types.StringValue(live[k])
	}
	state.Objects = types.MapValueMust(types.StringType, objects)
	if name := state.Webhook.TLSSecretName.ValueString(); name != "" {
		// Someone else renews this Secret: pick up its CA and expiry.
		if ca, notAfter, err := readTLSSecret(ctx, kube, state.Namespace.ValueString(), name); err == nil {
			state.CABundle = types.StringValue(string(ca))
			state.CertificateNotAfter = types.StringValue(notAfter.Format(time.RFC3339))
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(savePrivate(ctx, resp.Private, priv)...)
	setIdentity(ctx, resp.Identity, runtimeIdentityOf(state.Namespace, state.Name), &resp.Diagnostics)
}

// fillAddedAttributes sets the attributes that a state written by an older
// provider lacks (null) to what that deployment runs with, which is each
// one's default: the next plan then shows no change for a configuration
// that does not set them. webhook.deferred_deletion was not rendered
// before it existed, so the webhook runs without it.
func (m *runtimeModel) fillAddedAttributes() {
	if m.Webhook != nil && m.Webhook.DeferredDeletion.IsNull() {
		m.Webhook.DeferredDeletion = types.BoolValue(false)
	}
}

func (r *runtimeResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, timeout, _ := getTimed[runtimeModel](ctx, req.State, timeouts.Value.Delete, defaultRuntimeTimeout, &resp.Diagnostics)
	priv, diags := loadPrivate(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	dyn, err := r.conn.KubeDynamic()
	if err != nil {
		resp.Diagnostics.Append(explainKube(r.conn, "connecting to the Kubernetes cluster", err))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tflog.Info(ctx, "deleting the runtime", map[string]interface{}{"id": state.ID.ValueString(), "objects": len(priv.Applied)})
	if err := deleteKube(ctx, dyn, timeout, priv.applied()); err != nil {
		resp.Diagnostics.Append(explainKube(r.conn, "deleting the runtime", err))
	}
}

// runtimeImportAttributes are what an import ID may set: the inputs of
// depctrl_runtime that the deployed objects do not record.
var runtimeImportAttributes = []string{
	"workspace_path",
	"controller.kubeconfig_path", "controller.context",
	"webhook.kubeconfig_path", "webhook.context",
	"webhook.certificate_validity", "webhook.certificate_renew_before",
}

// readTLS reads the generated certificate and its issuer back from the
// cluster; nil when there is none yet (or someone deleted it, which the
// next apply repairs with a new one).
func (r *runtimeResource) readTLS(ctx context.Context, cfg deploy.Config) (*tlsMaterial, error) {
	kube, err := r.conn.Kube()
	if err != nil {
		return nil, err
	}
	return readGeneratedTLS(ctx, kube, cfg)
}
