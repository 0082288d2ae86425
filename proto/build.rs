//! Compiles the vendored upstream `.proto` files with protox (pure Rust: no `protoc` needed):
//! - Kubernetes' `k8s/k8s.io/**/generated.proto` into one binary `FileDescriptorSet` in
//!   OUT_DIR, embedded by `src/schema.rs` and walked at run time;
//! - gnostic's `k8s/github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto` (the message
//!   `/openapi/v2` is served as in protobuf) into Rust types by prost-build
//!   (OUT_DIR/openapi.v2.rs, included by `src/openapi_v2.rs`): a fixed document shape is
//!   easier to build and to check as plain structs than through descriptor tables.

use std::path::{Path, PathBuf};

/// The gnostic file, relative to the include root.
const GNOSTIC_OPENAPI_V2: &str = "github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto";

fn proto_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read proto dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            proto_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
}

fn compile_kubernetes(root: &Path, out: &Path) {
    let mut files = Vec::new();
    proto_files(&root.join("k8s.io"), &mut files);
    let relative: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(root).expect("under root").to_path_buf())
        .collect();
    let mut compiler = protox::Compiler::new([root]).expect("protox compiler");
    compiler.include_imports(true).include_source_info(false);
    compiler
        .open_files(relative)
        .expect("compile vendored k8s protos");
    let set = compiler.file_descriptor_set();
    std::fs::write(out.join("k8s.fds"), prost::Message::encode_to_vec(&set)).expect("write fds");
}

fn compile_gnostic(root: &Path, out: &Path) {
    let mut compiler = protox::Compiler::new([root]).expect("protox compiler");
    compiler.include_imports(true).include_source_info(false);
    compiler
        .open_files([GNOSTIC_OPENAPI_V2])
        .expect("compile vendored gnostic OpenAPIv2.proto");
    prost_build::Config::new()
        .out_dir(out)
        .compile_fds(compiler.file_descriptor_set())
        .expect("generate gnostic OpenAPI v2 types");
}

fn main() {
    let root = Path::new("k8s");
    println!("cargo:rerun-if-changed=k8s");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    compile_kubernetes(root, &out);
    compile_gnostic(root, &out);
}
