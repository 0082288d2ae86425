//! Compiles the vendored upstream Kubernetes `.proto` files (k8s/k8s.io/**/generated.proto)
//! into one binary `FileDescriptorSet` in OUT_DIR, embedded by `src/schema.rs`. Pure Rust
//! (protox): no `protoc` needed.

use std::path::{Path, PathBuf};

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

fn main() {
    let root = Path::new("k8s");
    println!("cargo:rerun-if-changed=k8s");
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
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("k8s.fds"), prost::Message::encode_to_vec(&set)).expect("write fds");
}
