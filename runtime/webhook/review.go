package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/scope"
)

// maxReviewBytes bounds an AdmissionReview body. kube-apiserver caps objects
// at 3 MiB; a DELETE review carries the old object once, plus envelope.
const maxReviewBytes = 4 << 20

// decodeReview reads an AdmissionReview from an HTTP request and checks the
// parts the validator relies on. Every failure is the caller's fault and is
// answered with 400, before anything else happens.
func decodeReview(r *http.Request) (*admissionv1.AdmissionReview, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("method %s not allowed: admission reviews are POSTed", r.Method)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, fmt.Errorf("content type %q not supported: send application/json", ct)
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if len(body) > maxReviewBytes {
		return nil, fmt.Errorf("admission review larger than %d bytes", maxReviewBytes)
	}
	if len(body) == 0 {
		return nil, errors.New("empty body: expected an AdmissionReview")
	}
	review := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, review); err != nil {
		return nil, fmt.Errorf("decoding AdmissionReview: %w", err)
	}
	if review.APIVersion != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("expected %s AdmissionReview, got %s %s", admissionv1.SchemeGroupVersion, review.APIVersion, review.Kind)
	}
	if review.Request == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	if review.Request.UID == "" {
		return nil, errors.New("AdmissionReview request has no uid")
	}
	return review, nil
}

// serveReview answers one admission request: a malformed one with 400,
// before decide sees it, a well-formed one with decide's response. observe
// records each outcome and how long it took.
func serveReview(w http.ResponseWriter, r *http.Request, log logr.Logger,
	decide func(context.Context, *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string),
	observe func(outcome string, start time.Time)) {
	start := time.Now()
	sc, err := scope.Parse(r.URL.Path)
	if err != nil {
		log.Info("rejecting admission request to a malformed URL", "error", err.Error(), "remote", r.RemoteAddr)
		observe(outcomeBadRequest, start)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	review, err := decodeReview(r)
	if err != nil {
		log.Info("rejecting malformed admission request", "error", err.Error(), "remote", r.RemoteAddr)
		observe(outcomeBadRequest, start)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, outcome := decide(withScope(r.Context(), sc), review.Request)
	observe(outcome, start)
	writeReview(w, review, resp)
}

// writeReview answers review with resp.
func writeReview(w http.ResponseWriter, review *admissionv1.AdmissionReview, resp *admissionv1.AdmissionResponse) {
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func allow(message string) *admissionv1.AdmissionResponse {
	r := &admissionv1.AdmissionResponse{Allowed: true}
	if message != "" {
		r.Result = &metav1.Status{Message: message}
	}
	return r
}

// deny refuses with an HTTP-like code: 403 when the object is protected,
// 503 when protection cannot decide now (retry), 400 for a bad request.
func deny(code int32, reason metav1.StatusReason, message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message},
	}
}
