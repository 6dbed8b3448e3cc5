// The icon of a file-tree entry: a folder, a link, or a file by its kind.
import { File, FileArchive, FileCode, FileImage, FileSpreadsheet, FileSymlink, FileText, Folder, FolderOpen, Presentation } from "lucide-react";

import { canvasKind, type CanvasKind } from "../panels/kinds";

const BY_KIND: Record<CanvasKind, typeof File> = {
  code: FileCode,
  markdown: FileText,
  slides: Presentation,
  csv: FileSpreadsheet,
  html: FileCode,
  image: FileImage,
  binary: FileArchive,
  text: FileText,
};

export function FileIcon({ path, type, expanded = false }: { path: string; type: string; expanded?: boolean }) {
  const Icon = type === "dir" ? (expanded ? FolderOpen : Folder) : type === "symlink" ? FileSymlink : BY_KIND[canvasKind(path)];
  const kind = type === "dir" || type === "symlink" ? type : canvasKind(path);
  return <Icon size={16} aria-hidden="true" className="file-icon" data-kind={kind} />;
}
