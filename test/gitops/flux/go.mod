// Pins Flux's source-controller and kustomize-controller (Flux v2.9) for the gitops suite.
// Their go.mod replaces ./api, so they are not built from this module: test/gitops/build.sh
// downloads each at the version below (checked against go.sum), drops the ./api replace
// (the api module of the same version is published) and builds inside the copy.
module edge-operator/test/gitops/flux

go 1.26

require (
	github.com/fluxcd/kustomize-controller v1.9.6
	github.com/fluxcd/source-controller v1.9.6
)
