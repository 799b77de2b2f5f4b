# The two commands of the README:
#
#   make run    build the playground if needed, then run the gateway
#   make test   install the test tools' npm packages and build the playground
#               if needed, then vet, run every Go test with -race (the
#               GraphQL-over-HTTP audit and the browser test among them), and
#               the frontend check
#
# `make build` makes the static binary the Dockerfile makes, and `make
# build-sim` the one deploy/costsim.Dockerfile makes. The Dockerfiles run the
# same commands as the recipes below; TestDockerfileRunsTheMakefile keeps
# them equal. `make deploy-check` validates the deployment files of deploy/.

PLAYGROUND := web/playground
PLAYGROUND_SOURCES := $(PLAYGROUND)/index.html $(PLAYGROUND)/vite.config.js $(PLAYGROUND)/package.json \
	$(wildcard $(PLAYGROUND)/src/*) $(wildcard $(PLAYGROUND)/public/*)

# Flags for `make run`, such as ARGS="-listen :9090".
ARGS ?=

.PHONY: run test build build-sim deploy-check playground fuzz bench bench-smoke bench-hostile bench-overhead bench-many-users profile frontend-check

# How long `make fuzz` runs each fuzz target: a duration, or a number of
# inputs such as 200000x. CI uses a count: a time limit makes Go's fuzzer
# report "context deadline exceeded" as a failure now and then on a loaded
# machine, when the deadline lands while a worker is mid-input.
FUZZTIME ?= 10s

# The gateway runs as the built binary, not under `go run`, so that what it
# exits with is its own (`go run` exits 1 when its program ends by a signal,
# however cleanly it stopped). On Ctrl-C make says "Interrupt" of itself.
run: playground
	go build -o .tmp/costgw .
	.tmp/costgw $(ARGS)

test: playground test/graphql-http/node_modules/.package-lock.json test/frontend/node_modules/.package-lock.json
	go vet ./...
	go test -race -count=1 -timeout 25m ./...
	cd test/frontend && npm run --silent check

build: playground
	go mod download
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o costgw .

playground: $(PLAYGROUND)/dist/index.html

# The simulator's static binary, the upstream of deploy/compose.yaml.
build-sim:
	go mod download
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o costsim ./cmd/costsim

# The deployment files (deploy/README.md). kubeconform validates the
# Kubernetes manifests against the schemas in deploy/k8s/schemas, generated
# from Kubernetes' own OpenAPI documents (so nothing but the Go module proxy
# is needed). compose-go's command, the loader of `docker compose`, loads
# deploy/compose.yaml as `docker compose config` would (merges, the Compose
# Specification's schema), from deploy/ as docker compose's project folder.
# deploy's tests check what a schema cannot: the compose stack's and the
# manifests' settings against the commands' flags, how their parts fit
# together, and the dashboard's queries against the gateway's metrics. It
# also runs the simulator image's commands (build-sim).
KUBECONFORM := github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0
COMPOSE_SPEC := github.com/compose-spec/compose-go/v2/cmd@v2.16.2
deploy-check: build-sim
	go run $(KUBECONFORM) -strict -summary -skip Kustomization \
	  -schema-location 'deploy/k8s/schemas/{{.ResourceKind}}{{.KindSuffix}}.json' $(wildcard deploy/k8s/*.yaml)
	cd deploy && go run $(COMPOSE_SPEC) compose.yaml >/dev/null && echo "compose.yaml: valid"
	go test -count=1 ./deploy

# The benchmarks: the gateway, a direct Go client and GraphQL Mesh on one
# simulator, then the telemetry overhead, many users of one key and hostile
# traffic, written to docs/benchmarks.md (about thirty minutes on 2 cores).
bench: bench/mesh/node_modules/.package-lock.json
	go -C bench run .

# The harness's own vet and tests (it is a module of its own, bench/go.mod,
# which the product's go vet ./... and go test ./... leave out: among them
# the minimum upstream calls of every benchmark query), then every benchmark
# configuration for about a second, to keep the harness working; the report
# goes to a temporary file.
bench-smoke: bench/mesh/node_modules/.package-lock.json
	go -C bench vet ./...
	go -C bench test -count=1 ./...
	go -C bench run . -smoke

# The hostile-traffic benchmark alone (issue 14): every hostile shape and
# random documents from 50 attackers beside legitimate traffic, a quiet run
# after each shape, then each tenant's fair share on pinned cores (taskset:
# the gateway and the simulator on one core, each tenant's load on the
# other), about four minutes. Its section of docs/benchmarks.md is replaced; the others are kept
# from docs/benchmarks.json. `make bench` runs it too, at its end.
bench-hostile:
	go -C bench run . -hostile

# The telemetry-overhead benchmark alone (issue 11): the gateway with its
# telemetry off, with its metrics on and scraped, and with tracing at 1 % and
# 100 % sampling to an OTLP/HTTP sink, at 50 clients (about four minutes).
# Its section of docs/benchmarks.md is replaced; the others are kept from
# docs/benchmarks.json. `make bench` and `make bench-smoke` run it too.
# OVERHEAD_ARGS go to the harness, such as
# OVERHEAD_ARGS="-overhead-duration 60s -overhead-rounds 6".
OVERHEAD_ARGS ?=

bench-overhead:
	go -C bench run . -overhead $(OVERHEAD_ARGS)

# CPU and allocation profiles of the gateway serving one of the benchmark
# queries (bench/queries.go) under the harness's load, written to
# bench/profiles/$(QUERY)/; it prints how to read them. PROFILE_ARGS go to
# the harness, such as PROFILE_ARGS="-profile-clients 200 -profile-duration 30s".
QUERY ?= Overview
PROFILE_ARGS ?=

profile:
	go -C bench run . -profile $(QUERY) $(PROFILE_ARGS)

# The many-users benchmark alone (issue 36): 100 clients with one API key
# load the Overview and the Dashboard in turn, 20 ms per upstream call, on
# the gateway with its cache off and on, a minute each (about two and a half
# minutes). Its section of docs/benchmarks.md is replaced; the others are
# kept from docs/benchmarks.json. `make bench` and `make bench-smoke` run it
# too. MANY_USERS_ARGS go to the harness, such as
# MANY_USERS_ARGS="-many-users-duration 2m -many-users-rounds 4".
MANY_USERS_ARGS ?=

bench-many-users:
	go -C bench run . -many-users $(MANY_USERS_ARGS)

bench/mesh/node_modules/.package-lock.json: bench/mesh/package-lock.json bench/mesh/package.json
	cd bench/mesh && npm ci

# The graphql-http package, whose server audit graph/httpspec_test.go runs.
test/graphql-http/node_modules/.package-lock.json: test/graphql-http/package-lock.json test/graphql-http/package.json
	cd test/graphql-http && npm ci

# What a frontend sees of the schema (test/frontend/README.md): relay-compiler
# and graphql-codegen compile the operations in test/frontend against the
# golden schema, the generated types have no `any` for a field, and no
# breaking change in the schema's git history is left unacknowledged.
frontend-check: test/frontend/node_modules/.package-lock.json
	cd test/frontend && npm run --silent check

test/frontend/node_modules/.package-lock.json: test/frontend/package-lock.json test/frontend/package.json
	cd test/frontend && npm ci

# Runs every fuzz target of the module for FUZZTIME each, starting from its
# committed seed corpus (testdata/fuzz) and its f.Add seeds.
fuzz:
	@for f in $$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz'); do \
	  for name in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
	    echo "== $$name (./$$(dirname $$f))"; \
	    go test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) ./$$(dirname $$f) || exit 1; \
	  done; \
	done

# npm ci installs exactly the lockfile; npm writes node_modules/.package-lock.json
# when it does, so this runs again only when the lockfile changes.
$(PLAYGROUND)/node_modules/.package-lock.json: $(PLAYGROUND)/package-lock.json $(PLAYGROUND)/package.json
	cd $(PLAYGROUND) && npm ci

# The build is embedded in the binary (web/playground/playground.go), so it
# must exist before `go run` or `go build`; it is redone when a source is
# newer than it.
$(PLAYGROUND)/dist/index.html: $(PLAYGROUND)/node_modules/.package-lock.json $(PLAYGROUND_SOURCES)
	cd $(PLAYGROUND) && npm run build
