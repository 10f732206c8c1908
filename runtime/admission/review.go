package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DecideFunc decides one well-formed admission request and names the
// outcome for metrics.
type DecideFunc func(context.Context, *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string)

// NewHandler serves decide with controller-runtime's admission
// webhook, which reads, decodes and answers the AdmissionReview. A body that
// is not an AdmissionReview, a review without a request UID, and a URL whose
// scope is malformed are refused with 400 before decide sees them. observe
// records each outcome and how long it took.
func NewHandler(log logr.Logger, decide DecideFunc, observe func(outcome string, start time.Time)) http.Handler {
	return strictReviews(log, observe, &cradmission.Webhook{
		Handler: &reviewHandler{log: log, decide: decide, observe: observe},
		WithContextFunc: func(ctx context.Context, r *http.Request) context.Context {
			sc, err := Parse(r.URL.Path)
			if err != nil {
				return context.WithValue(ctx, scopeErrorKey{}, err)
			}
			return withScope(ctx, sc)
		},
		LogConstructor: func(logr.Logger, *cradmission.Request) logr.Logger { return log },
	})
}

// MaxReviewBytes bounds an AdmissionReview body. kube-apiserver caps objects
// at 3 MiB; a DELETE review carries the old object once, plus envelope.
const MaxReviewBytes = 4 << 20

// Outcomes every handler reports in its metrics.
const (
	// OutcomeBadRequest: the request was refused as malformed.
	OutcomeBadRequest = "bad_request"
	// OutcomeNotInitialized: the webhook has not read the rules yet.
	OutcomeNotInitialized = "not_initialized"
	// OutcomeError: the handler could not decide.
	OutcomeError = "error"
)

// strictReviews refuses, with 400, what controller-runtime would decode
// leniently: a method other than POST, a body over MaxReviewBytes, and a
// body that does not say it is an cradmission.k8s.io/v1 AdmissionReview
// (controller-runtime decodes any kind into one, and answers it).
func strictReviews(log logr.Logger, observe func(outcome string, start time.Time), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		body, err := readReview(r)
		if err != nil {
			log.Info("rejecting malformed admission request", "error", err.Error(), "remote", r.RemoteAddr)
			observe(OutcomeBadRequest, start)
			resp := cradmission.Errored(http.StatusBadRequest, err)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
				Response: &resp.AdmissionResponse,
			})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// readReview reads the body of an admission request and checks what it
// says it is.
func readReview(r *http.Request) ([]byte, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("method %s not allowed: admission reviews are POSTed", r.Method)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxReviewBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if len(body) > MaxReviewBytes {
		return nil, fmt.Errorf("admission review larger than %d bytes", MaxReviewBytes)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(body, &tm); err != nil {
		return nil, fmt.Errorf("decoding AdmissionReview: %w", err)
	}
	if tm.APIVersion != admissionv1.SchemeGroupVersion.String() || tm.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("expected %s AdmissionReview, got %q %q", admissionv1.SchemeGroupVersion, tm.APIVersion, tm.Kind)
	}
	return body, nil
}

type scopeErrorKey struct{}

// reviewHandler is the cradmission.Handler around a decide function.
type reviewHandler struct {
	log     logr.Logger
	decide  DecideFunc
	observe func(outcome string, start time.Time)
}

// Handle checks what controller-runtime does not, then decides.
func (h *reviewHandler) Handle(ctx context.Context, req cradmission.Request) cradmission.Response {
	start := time.Now()
	if err, _ := ctx.Value(scopeErrorKey{}).(error); err != nil {
		h.log.Info("rejecting admission request to a malformed URL", "error", err.Error())
		h.observe(OutcomeBadRequest, start)
		return cradmission.Errored(http.StatusBadRequest, err)
	}
	if req.UID == "" {
		err := errors.New("AdmissionReview request has no uid")
		h.log.Info("rejecting malformed admission request", "error", err.Error())
		h.observe(OutcomeBadRequest, start)
		return cradmission.Errored(http.StatusBadRequest, err)
	}
	resp, outcome := h.decide(ctx, &req.AdmissionRequest)
	h.observe(outcome, start)
	return cradmission.Response{AdmissionResponse: *resp}
}

// Allow admits, with message when not empty.
func Allow(message string) *admissionv1.AdmissionResponse {
	r := &admissionv1.AdmissionResponse{Allowed: true}
	if message != "" {
		r.Result = &metav1.Status{Message: message}
	}
	return r
}

// Deny refuses with an HTTP-like code: 403 when the object is protected,
// 503 when protection cannot decide now (retry), 400 for a bad request.
func Deny(code int32, reason metav1.StatusReason, message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message},
	}
}
